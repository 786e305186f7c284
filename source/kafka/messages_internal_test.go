package kafka

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/txinbox/txinbox"
)

// TestMessages checks the conversion of a chunk of records: each
// message's headers in order with their exact values (empty, NUL,
// invalid UTF-8, a repeated key; the values of a record share one string),
// a record without headers between records with headers, the id from the
// key, the source position and the partition's key.
func TestMessages(t *testing.T) {
	t.Parallel()
	hs := func(kv ...string) []kgo.RecordHeader {
		var out []kgo.RecordHeader
		for i := 0; i < len(kv); i += 2 {
			out = append(out, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return out
	}
	recs := []*kgo.Record{
		{Topic: "inv", Partition: 7, Offset: 41, Value: []byte("a"), Headers: hs("message-id", "A-1", "x", "", "x", "second")},
		{Topic: "inv", Partition: 7, Offset: 42, Value: []byte("b")},
		{Topic: "inv", Partition: 7, Offset: 1 << 40, Value: nil, Headers: hs("message-id", "A-3", "bin", "\x00\xff\xfe", "last", "z")},
	}
	c := &Consumer{cfg: Config{Key: HeaderKey("message-id")}}
	msgs, positions := c.messages(topicPartition{"inv", 7}, recs)
	want := []txinbox.Message{
		{ID: "A-1", Source: "inv", SourcePosition: "7:41", PartitionKey: "inv/7", Payload: []byte("a"),
			Headers: []txinbox.Header{{Key: "message-id", Value: "A-1"}, {Key: "x", Value: ""}, {Key: "x", Value: "second"}}},
		{ID: "", Source: "inv", SourcePosition: "7:42", PartitionKey: "inv/7", Payload: []byte("b")},
		{ID: "A-3", Source: "inv", SourcePosition: "7:1099511627776", PartitionKey: "inv/7",
			Headers: []txinbox.Header{{Key: "message-id", Value: "A-3"}, {Key: "bin", Value: "\x00\xff\xfe"}, {Key: "last", Value: "z"}}},
	}
	if !slices.Equal(positions, []int64{41, 42, 1 << 40}) {
		t.Errorf("positions = %v", positions)
	}
	for i, m := range msgs {
		w := want[i]
		if m.ID != w.ID || m.Source != w.Source || m.SourcePosition != w.SourcePosition || m.PartitionKey != w.PartitionKey ||
			string(m.Payload) != string(w.Payload) || !slices.Equal(m.Headers, w.Headers) {
			t.Errorf("message %d = %+v\nwant %+v", i, *m, w)
		}
	}
	// A header slice of one message cannot grow into the next one's.
	msgs[0].Headers = append(msgs[0].Headers, txinbox.Header{Key: "added"})
	if !slices.Equal(msgs[2].Headers, want[2].Headers) {
		t.Errorf("appending to message 0's headers changed message 2's: %+v", msgs[2].Headers)
	}
}
