package pgstore

import (
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/txinbox/txinbox/store"
)

// The claim statements take a batch as arrays, one per column. pgx
// encodes a []string or [][]byte through reflection and boxes every
// element into an interface (an allocation each); on the batch path that
// was a fifth of the Go process's CPU time (a CPU profile of `txinbox
// bench --only declarative`). These types are pgtype.ArrayGetters whose
// elements are pointers into the slice, so pgx encodes them without
// reflection and without allocating per element. Each encodes as the
// binary array of its element type.
//
// pgx knows a parameter's type only from a statement description, which
// the query exec modes exec and simple_protocol (set for PgBouncer) do
// not ask for: there it encodes every parameter as text for an unknown
// type (OID 0), and finds no plan for these types by their array type.
// But it first asks a value in text format whether it is a
// pgtype.TextValuer, before any type lookup: each of these types is one,
// and answers with its array literal (arrayLiteral). The modes that
// describe the statement encode these parameters in binary, which never
// asks (pgx.ExtendedQueryBuilder picks the format pgx registers for
// the described type: binary for text[], bytea[] and timestamptz[]).

// textArray is a text[] parameter.
type textArray []string

// textElem is an element of textArray or nullTextArray.
type textElem string

// TextValue implements pgtype.TextValuer.
func (e *textElem) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*e), Valid: true}, nil
}

// TextValue implements pgtype.TextValuer: the array literal.
func (a textArray) TextValue() (pgtype.Text, error) { return arrayLiteral(pgtype.TextArrayOID, a) }

func (a textArray) Dimensions() []pgtype.ArrayDimension { return dims(len(a)) }
func (a textArray) Index(i int) any                     { return (*textElem)(&a[i]) }
func (a textArray) IndexType() any                      { return (*textElem)(nil) }

// nullTextArray is a text[] parameter whose nil elements are NULL.
type nullTextArray []*string

// TextValue implements pgtype.TextValuer: the array literal.
func (a nullTextArray) TextValue() (pgtype.Text, error) { return arrayLiteral(pgtype.TextArrayOID, a) }

func (a nullTextArray) Dimensions() []pgtype.ArrayDimension { return dims(len(a)) }
func (a nullTextArray) IndexType() any                      { return (*textElem)(nil) }

// Index returns a typed nil pointer for a nil element, which pgx sends as
// NULL.
func (a nullTextArray) Index(i int) any { return (*textElem)(a[i]) }

// byteaArray is a bytea[] parameter; a nil element is NULL.
type byteaArray [][]byte

// byteaElem is an element of byteaArray.
type byteaElem []byte

// BytesValue implements pgtype.BytesValuer.
func (e *byteaElem) BytesValue() ([]byte, error) { return *e, nil }

// TextValue implements pgtype.TextValuer: the array literal.
func (a byteaArray) TextValue() (pgtype.Text, error) { return arrayLiteral(pgtype.ByteaArrayOID, a) }

func (a byteaArray) Dimensions() []pgtype.ArrayDimension { return dims(len(a)) }
func (a byteaArray) IndexType() any                      { return (*byteaElem)(nil) }

// Index returns a typed nil pointer for a nil element, which pgx sends as
// NULL.
func (a byteaArray) Index(i int) any {
	if a[i] == nil {
		return (*byteaElem)(nil)
	}
	return (*byteaElem)(&a[i])
}

// timeArray is a timestamptz[] parameter.
type timeArray []time.Time

// timeElem is an element of timeArray.
type timeElem time.Time

// TimestamptzValue implements pgtype.TimestamptzValuer.
func (e *timeElem) TimestamptzValue() (pgtype.Timestamptz, error) {
	return pgtype.Timestamptz{Time: time.Time(*e), Valid: true}, nil
}

// TextValue implements pgtype.TextValuer: the array literal.
func (a timeArray) TextValue() (pgtype.Text, error) {
	return arrayLiteral(pgtype.TimestamptzArrayOID, a)
}

func (a timeArray) Dimensions() []pgtype.ArrayDimension { return dims(len(a)) }
func (a timeArray) Index(i int) any                     { return (*timeElem)(&a[i]) }
func (a timeArray) IndexType() any                      { return (*timeElem)(nil) }

// textMaps are type maps for arrayLiteral; a pgtype.Map is not safe for
// concurrent use (it memoizes its plans).
var textMaps = sync.Pool{New: func() any { return pgtype.NewMap() }}

// arrayLiteral is a's text form as an array of type oid, e.g.
// {"a",NULL}, encoded by pgx's array codec: it quotes and escapes the
// elements, and gives each its type's text form (bytea as \x hex,
// timestamptz with its offset). Only the modes without a statement
// description call it, where allocations per element do not matter.
func arrayLiteral(oid uint32, a pgtype.ArrayGetter) (pgtype.Text, error) {
	m := textMaps.Get().(*pgtype.Map)
	defer textMaps.Put(m)
	buf, err := m.Encode(oid, pgtype.TextFormatCode, plainArray{a}, nil)
	if err != nil {
		return pgtype.Text{}, err
	}
	return pgtype.Text{String: string(buf), Valid: buf != nil}, nil
}

// plainArray is an ArrayGetter without the TextValue of the one it
// wraps, which pgx would otherwise call again instead of its array codec.
type plainArray struct{ pgtype.ArrayGetter }

// dims are the dimensions of a one-dimensional array of n elements; an
// empty array has none (pgx sends '{}', not NULL, for a non-nil empty
// dimension list).
func dims(n int) []pgtype.ArrayDimension {
	if n == 0 {
		return []pgtype.ArrayDimension{}
	}
	return []pgtype.ArrayDimension{{Length: int32(n), LowerBound: 1}}
}

// claimView is a claim's batch read in place: row(i) is the i-th row of
// a []store.ClaimRow, or the ClaimRow of the i-th store.EffectRow. The
// claim's parameters are columns of it (newClaimArgs), so a batch is not
// copied into an array per column before pgx encodes it.
type claimView struct {
	n   int
	row func(int) *store.ClaimRow
}

func viewClaimRows(rows []store.ClaimRow) claimView {
	return claimView{n: len(rows), row: func(i int) *store.ClaimRow { return &rows[i] }}
}

func viewEffectRows(rows []store.EffectRow) claimView {
	return claimView{n: len(rows), row: func(i int) *store.ClaimRow { return &rows[i].ClaimRow }}
}

func (v claimView) key(i int) store.Key { return v.row(i).Key }

// length is the number of elements a column sends: 1 when every row's
// value equals the first row's (the claim's statement pads it back:
// pgsql.BatchSelect), else one per row.
func (v claimView) length(equal func(a, b *store.ClaimRow) bool) int {
	for i := 1; i < v.n; i++ {
		if !equal(v.row(0), v.row(i)) {
			return v.n
		}
	}
	return min(1, v.n)
}

// textColumn is a text[] parameter: a field of the first n rows of v.
type textColumn struct {
	v     claimView
	n     int
	field func(*store.ClaimRow) *string
}

// TextValue implements pgtype.TextValuer: the array literal.
func (c textColumn) TextValue() (pgtype.Text, error) { return arrayLiteral(pgtype.TextArrayOID, c) }

func (c textColumn) Dimensions() []pgtype.ArrayDimension { return dims(c.n) }
func (c textColumn) Index(i int) any                     { return (*textElem)(c.field(c.v.row(i))) }
func (c textColumn) IndexType() any                      { return (*textElem)(nil) }

// hashColumn is the bytea[] parameter of the rows' payload hashes; a nil
// hash is NULL.
type hashColumn struct{ v claimView }

// TextValue implements pgtype.TextValuer: the array literal.
func (c hashColumn) TextValue() (pgtype.Text, error) { return arrayLiteral(pgtype.ByteaArrayOID, c) }

func (c hashColumn) Dimensions() []pgtype.ArrayDimension { return dims(c.v.n) }
func (c hashColumn) IndexType() any                      { return (*byteaElem)(nil) }
func (c hashColumn) Index(i int) any {
	r := c.v.row(i)
	if r.PayloadHash == nil {
		return (*byteaElem)(nil)
	}
	return (*byteaElem)(&r.PayloadHash)
}

// receivedColumn is the timestamptz[] parameter of the first n rows'
// receive times.
type receivedColumn struct {
	v claimView
	n int
}

// TextValue implements pgtype.TextValuer: the array literal.
func (c receivedColumn) TextValue() (pgtype.Text, error) {
	return arrayLiteral(pgtype.TimestamptzArrayOID, c)
}

func (c receivedColumn) Dimensions() []pgtype.ArrayDimension { return dims(c.n) }
func (c receivedColumn) Index(i int) any                     { return (*timeElem)(&c.v.row(i).ReceivedAt) }
func (c receivedColumn) IndexType() any                      { return (*timeElem)(nil) }
