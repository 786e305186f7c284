package pgstore

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// The claim statements take a batch as arrays, one per column. pgx
// encodes a []string or [][]byte through reflection and boxes every
// element into an interface (an allocation each); on the batch path that
// was a fifth of the Go process's CPU time (a CPU profile of `txinbox
// bench --only declarative`). These types are pgtype.ArrayGetters whose
// elements are pointers into the slice, so pgx encodes them without
// reflection and without allocating per element. Each encodes as the
// binary array of its element type.

// textArray is a text[] parameter.
type textArray []string

// textElem is an element of textArray or nullTextArray.
type textElem string

// TextValue implements pgtype.TextValuer.
func (e *textElem) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*e), Valid: true}, nil
}

func (a textArray) Dimensions() []pgtype.ArrayDimension { return dims(len(a)) }
func (a textArray) Index(i int) any                     { return (*textElem)(&a[i]) }
func (a textArray) IndexType() any                      { return (*textElem)(nil) }

// nullTextArray is a text[] parameter whose nil elements are NULL.
type nullTextArray []*string

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

func (a timeArray) Dimensions() []pgtype.ArrayDimension { return dims(len(a)) }
func (a timeArray) Index(i int) any                     { return (*timeElem)(&a[i]) }
func (a timeArray) IndexType() any                      { return (*timeElem)(nil) }

// dims are the dimensions of a one-dimensional array of n elements; an
// empty array has none (pgx sends '{}', not NULL, for a non-nil empty
// dimension list).
func dims(n int) []pgtype.ArrayDimension {
	if n == 0 {
		return []pgtype.ArrayDimension{}
	}
	return []pgtype.ArrayDimension{{Length: int32(n), LowerBound: 1}}
}
