// Package sqsfake is an in-process Amazon SQS that speaks the JSON protocol
// of today's SDKs (aws-sdk-go-v2/service/sqs), for tests and demos where no
// SQS endpoint is at hand. It models what the txinbox source relies on:
// visibility timeouts, receive counts and receipt handles (only the latest
// handle deletes, as in SQS), long polling, delays, retention, batches,
// FIFO queues with deduplication ids and message groups, and the MD5
// digests the SDK verifies. Faults can be injected per action.
//
//	srv := sqsfake.NewServer()
//	defer srv.Close()
//	client := sqs.New(sqs.Options{BaseEndpoint: aws.String(srv.URL()), Region: "us-east-1",
//		Credentials: sqsfake.Credentials})
//
// Requests are not authenticated.
package sqsfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// AccountID is the account in the queue URLs.
const AccountID = "000000000000"

// Credentials are static credentials for a client of the fake.
var Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: "sqsfake", SecretAccessKey: "sqsfake", Source: "sqsfake"}, nil
})

// Server is the fake SQS endpoint.
type Server struct {
	http *httptest.Server
	now  func() time.Time

	mu     sync.Mutex
	queues map[string]*queue
	// changed is closed and replaced whenever a message becomes
	// available, to wake long polls.
	changed chan struct{}
	faults  map[string]int
	seq     int64
	signers map[string]bool
}

// NewServer starts a fake on a loopback port.
func NewServer() *Server {
	s := &Server{now: time.Now, queues: map[string]*queue{}, changed: make(chan struct{}), faults: map[string]int{}, signers: map[string]bool{}}
	s.http = httptest.NewServer(s)
	return s
}

// URL is the endpoint, for the client's BaseEndpoint.
func (s *Server) URL() string { return s.http.URL }

// Close shuts the server down.
func (s *Server) Close() {
	s.http.CloseClientConnections()
	s.http.Close()
}

// CloseClientConnections cuts every open client connection: a network
// failure.
func (s *Server) CloseClientConnections() { s.http.CloseClientConnections() }

// FailNext makes the next n requests of action (e.g. "DeleteMessageBatch")
// fail with an InternalError (HTTP 500).
func (s *Server) FailNext(action string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[action] += n
}

// Signers lists, sorted, the access key ids and regions that signed the
// requests so far, as "KEY/REGION" from each SigV4 credential scope: which
// credentials and region a client picked up. Signatures are not verified.
func (s *Server) Signers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.signers))
	for k := range s.signers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// recordSigner notes the access key id and region of a request's SigV4
// Authorization header (Credential=KEY/DATE/REGION/SERVICE/aws4_request).
func (s *Server) recordSigner(r *http.Request) {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) < 3 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signers[parts[0]+"/"+parts[2]] = true
}

// apiError is an SQS error response.
type apiError struct {
	status int
	code   string
	msg    string
}

// Error implements error.
func (e *apiError) Error() string { return e.code + ": " + e.msg }

func errBadRequest(code, format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, code, fmt.Sprintf(format, args...)}
}

const targetPrefix = "AmazonSQS."

// ServeHTTP answers one JSON-protocol request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.recordSigner(r)
	action, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	var out any
	var err error
	switch {
	case r.Method != http.MethodPost || !ok:
		err = errBadRequest("InvalidAction", "POST with an X-Amz-Target header %s<Action> expected", targetPrefix)
	case s.fault(action):
		err = &apiError{http.StatusInternalServerError, "InternalError", "injected fault"}
	default:
		out, err = s.dispatch(r.Context(), action, r)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-RequestId", fmt.Sprintf("req-%d", time.Now().UnixNano()))
	if err != nil {
		ae, ok := err.(*apiError)
		if !ok {
			ae = errBadRequest("InvalidParameterValue", "%v", err)
		}
		w.WriteHeader(ae.status)
		json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + ae.code, "message": ae.msg}) //nolint:errcheck // client gone
		return
	}
	json.NewEncoder(w).Encode(out) //nolint:errcheck // client gone
}

func (s *Server) fault(action string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults[action] > 0 {
		s.faults[action]--
		return true
	}
	return false
}

// handler decodes a request of one action and answers it.
type handler func(s *Server, ctx context.Context, r *http.Request) (any, error)

var handlers = map[string]handler{
	"CreateQueue":                  decode((*Server).createQueue),
	"GetQueueUrl":                  decode((*Server).getQueueURL),
	"GetQueueAttributes":           decode((*Server).getQueueAttributes),
	"SetQueueAttributes":           decode((*Server).setQueueAttributes),
	"DeleteQueue":                  decode((*Server).deleteQueue),
	"PurgeQueue":                   decode((*Server).purgeQueue),
	"SendMessage":                  decode((*Server).sendMessage),
	"SendMessageBatch":             decode((*Server).sendMessageBatch),
	"ReceiveMessage":               decodeCtx((*Server).receiveMessage),
	"DeleteMessage":                decode((*Server).deleteMessage),
	"DeleteMessageBatch":           decode((*Server).deleteMessageBatch),
	"ChangeMessageVisibility":      decode((*Server).changeVisibility),
	"ChangeMessageVisibilityBatch": decode((*Server).changeVisibilityBatch),
}

func (s *Server) dispatch(ctx context.Context, action string, r *http.Request) (any, error) {
	h := handlers[action]
	if h == nil {
		return nil, errBadRequest("UnsupportedOperation", "sqsfake does not implement %s", action)
	}
	return h(s, ctx, r)
}

func decode[In, Out any](f func(*Server, *In) (Out, error)) handler {
	return decodeCtx(func(s *Server, _ context.Context, in *In) (Out, error) { return f(s, in) })
}

func decodeCtx[In, Out any](f func(*Server, context.Context, *In) (Out, error)) handler {
	return func(s *Server, ctx context.Context, r *http.Request) (any, error) {
		in := new(In)
		if err := json.NewDecoder(r.Body).Decode(in); err != nil {
			return nil, errBadRequest("InvalidParameterValue", "request body: %v", err)
		}
		return f(s, ctx, in)
	}
}

// queueOf finds the queue of a QueueUrl (by its last path segment).
func (s *Server) queueOf(queueURL string) (*queue, error) {
	name := queueURL[strings.LastIndexByte(queueURL, '/')+1:]
	q := s.queues[name]
	if q == nil {
		return nil, errBadRequest("QueueDoesNotExist", "The specified queue does not exist: %s", queueURL)
	}
	return q, nil
}

// wake wakes the long polls. Call with s.mu held.
func (s *Server) wake() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) nextID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s-%08d-%d", prefix, s.seq, s.now().UnixNano()%1_000_000)
}
