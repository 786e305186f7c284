package httpinbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/http"
	"strconv"
)

// ErrReplyTooLarge is what a handler's Write returns once its response
// passes Route.MaxReplyBytes: the request fails (500), nothing commits.
var ErrReplyTooLarge = errors.New("httpinbox: the response is larger than Route.MaxReplyBytes")

// recorder captures a handler's response: it is written to the client
// only once the transaction that stores it has committed.
type recorder struct {
	header   http.Header
	snapshot http.Header // the header at WriteHeader
	code     int
	body     bytes.Buffer
	max      int
	overflow bool
}

func newRecorder(max int) *recorder { return &recorder{header: http.Header{}, max: max} }

// Header returns the header to be sent.
func (r *recorder) Header() http.Header { return r.header }

// WriteHeader records the status; informational (1xx) ones are dropped.
func (r *recorder) WriteHeader(code int) {
	if r.code != 0 || code < 200 {
		return
	}
	r.code = code
	r.snapshot = r.header.Clone()
}

// Write buffers the body, up to the limit.
func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.body.Len()+len(b) > r.max {
		r.overflow = true
		return 0, ErrReplyTooLarge
	}
	return r.body.Write(b)
}

// status is the status the handler gave (200 if it wrote nothing).
func (r *recorder) status() int {
	if r.code == 0 {
		r.WriteHeader(http.StatusOK)
	}
	return r.code
}

// reply is a response as stored and replayed.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r *recorder) reply() reply {
	return reply{status: r.status(), header: r.snapshot, body: r.body.Bytes()}
}

// replyMagic starts every stored reply: its encoding's version.
const replyMagic = "TXR1"

// encode is the stored form: the magic, the status, the header fields
// (count, then each name and value with their lengths), then the body.
func (rp reply) encode() []byte {
	b := make([]byte, 0, len(rp.body)+256)
	b = append(b, replyMagic...)
	b = binary.AppendUvarint(b, uint64(rp.status))
	n := 0
	for _, vs := range rp.header {
		n += len(vs)
	}
	b = binary.AppendUvarint(b, uint64(n))
	for k, vs := range rp.header {
		for _, v := range vs {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	return append(b, rp.body...)
}

var errBadReply = errors.New("httpinbox: stored reply is not readable")

// decodeReply reads a stored reply back.
func decodeReply(b []byte) (reply, error) {
	if !bytes.HasPrefix(b, []byte(replyMagic)) {
		return reply{}, errBadReply
	}
	b = b[len(replyMagic):]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	str := func() (string, bool) {
		l, ok := next()
		if !ok || l > uint64(len(b)) {
			return "", false
		}
		s := string(b[:l])
		b = b[l:]
		return s, true
	}
	status, ok := next()
	if !ok || status < 100 || status > 999 {
		return reply{}, errBadReply
	}
	n, ok := next()
	if !ok || n > uint64(len(b)) {
		return reply{}, errBadReply
	}
	rp := reply{status: int(status), header: make(http.Header, n)}
	for range n {
		k, ok1 := str()
		v, ok2 := str()
		if !ok1 || !ok2 {
			return reply{}, errBadReply
		}
		rp.header[k] = append(rp.header[k], v)
	}
	rp.body = b
	return rp, nil
}

// write sends rp to w, with its Content-Length, and the replay marker for
// a replay.
func (rp reply) write(w http.ResponseWriter, replayed bool) {
	h := w.Header()
	for k, vs := range rp.header {
		h[k] = append([]string(nil), vs...)
	}
	if h.Get("Transfer-Encoding") == "" {
		h.Set("Content-Length", strconv.Itoa(len(rp.body)))
	}
	if replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(rp.status)
	w.Write(rp.body) //nolint:errcheck // the client went away: nothing to do
}

// StoredResponse is a response as the inbox stores it for replays: what
// `txinbox inspect` and the console show of an HTTP key.
type StoredResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// ParseStoredResponse reads a stored response back from an inbox row's
// reply (store.InboxRecord.Reply); an error says the reply was not stored
// by this package.
func ParseStoredResponse(b []byte) (StoredResponse, error) {
	rp, err := decodeReply(b)
	if err != nil {
		return StoredResponse{}, err
	}
	return StoredResponse{Status: rp.status, Header: rp.header, Body: rp.body}, nil
}
