package pgstore

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txinbox/txinbox/internal/testdb"
)

// TestArrayParams sends each array parameter type to PostgreSQL and reads
// it back as PostgreSQL decoded it: the elements, their order, NULLs
// (nil elements) apart from empty values, and empty arrays, in pgx's
// default binary format and in the statement cache's, and as the array
// literals of the exec modes that describe no statement (TextValue).
func TestArrayParams(t *testing.T) {
	testdb.Require(t)
	empty, long := "", string(bytes.Repeat([]byte("é"), 5000))
	at := time.Date(2026, 12, 2, 6, 30, 0, 123456000, time.UTC)
	for _, tc := range []arrayParams{
		{name: "values", texts: textArray{"a", "", long}, nulls: nullTextArray{&empty, nil, &long},
			bytes: byteaArray{{1, 2}, {}, nil}, times: timeArray{at, {}, at.Add(time.Hour)}, wantNull: []bool{false, false, true}},
		{name: "empty", texts: textArray{}, nulls: nullTextArray{}, bytes: byteaArray{}, times: timeArray{}},
		{name: "quoting", texts: textArray{`"`, `\`, "NULL", "{a,b}", " x "}, nulls: nullTextArray{nil, &empty, &long},
			bytes: byteaArray{{0, '\\', '"'}, nil, {'{', ','}}, times: timeArray{at.In(time.FixedZone("", -(9*3600 + 30*60)))},
			wantNull: []bool{false, true, false}},
	} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) { checkArrayParams(t, mode, tc) })
		}
	}
}

// arrayParams are the parameters of TestArrayParams' cases.
type arrayParams struct {
	name     string
	texts    textArray
	nulls    nullTextArray
	bytes    byteaArray
	times    timeArray
	wantNull []bool
}

// checkArrayParams sends tc's parameters in mode and checks what
// PostgreSQL read.
func checkArrayParams(t *testing.T, mode pgx.QueryExecMode, tc arrayParams) {
	pool := testdb.Require(t)
	ctx := context.Background()
	var texts, nulls []*string
	var bs [][]byte
	var times []time.Time
	var bytesNull []bool
	err := pool.QueryRow(ctx, `SELECT $1::text[], $2::text[], $3::bytea[], $4::timestamptz[],
		ARRAY(SELECT b IS NULL FROM unnest($3::bytea[]) AS b)`,
		mode, tc.texts, tc.nulls, tc.bytes, tc.times).Scan(&texts, &nulls, &bs, &times, &bytesNull)
	if err != nil {
		t.Fatal(err)
	}
	if got := deref(texts); !slices.Equal(got, []string(tc.texts)) || len(texts) != len(tc.texts) {
		t.Errorf("text[] = %q, want %q", got, tc.texts)
	}
	for i := range tc.nulls {
		if (nulls[i] == nil) != (tc.nulls[i] == nil) || nulls[i] != nil && *nulls[i] != *tc.nulls[i] {
			t.Errorf("nullable text[%d] = %v, want %v", i, nulls[i], tc.nulls[i])
		}
	}
	if len(nulls) != len(tc.nulls) {
		t.Errorf("nullable text[] has %d elements, want %d", len(nulls), len(tc.nulls))
	}
	if !slices.EqualFunc(bs, tc.bytes, bytes.Equal) || !slices.Equal(bytesNull, tc.wantNull) && len(tc.wantNull) > 0 {
		t.Errorf("bytea[] = %v (NULL: %v), want %v (NULL: %v)", bs, bytesNull, tc.bytes, tc.wantNull)
	}
	if !slices.EqualFunc(times, tc.times, time.Time.Equal) {
		t.Errorf("timestamptz[] = %v, want %v", times, tc.times)
	}
}

func deref(ss []*string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		if s != nil {
			out[i] = *s
		}
	}
	return out
}
