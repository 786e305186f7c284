package txinbox

import (
	"context"
	"errors"

	"github.com/txinbox/txinbox/store"
)

// claimInFlight is the claim status the processor gives, itself, a key
// whose lock another transaction holds (Config.FailFastInFlight): it was
// not claimed.
const claimInFlight store.ClaimStatus = 100

// lockInFlight takes, with Config.FailFastInFlight and a store that can,
// the lock of each item's key without waiting; it returns the items to
// claim and the claim results of all items, with claimInFlight set for
// the others (nil when every item is to be claimed).
func (p *Processor[TTx]) lockInFlight(ctx context.Context, tx store.Tx[TTx], items []*item) ([]*item, []store.ClaimResult, error) {
	if !p.cfg.FailFastInFlight {
		return items, nil, nil
	}
	locker, ok := tx.(store.InFlightLocker)
	if !ok {
		return items, nil, nil
	}
	keys := make([]store.Key, len(items))
	for i, it := range items {
		keys[i] = it.row.Key
	}
	got, err := locker.TryLockKeys(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	var claim []*item
	res := make([]store.ClaimResult, len(items))
	for i, it := range items {
		if got[i] {
			claim = append(claim, it)
		} else {
			res[i].Status = claimInFlight
		}
	}
	if len(claim) == len(items) {
		return items, nil, nil
	}
	return claim, res, nil
}

var errNoReplyKeeper = errors.New("txinbox: Config.Replies: the store's transactions do not implement store.ReplyKeeper")

// saveReplies stores the replies of the messages processed by this
// transaction (Config.Replies), just before its commit.
func (p *Processor[TTx]) saveReplies(ctx context.Context, tx store.Tx[TTx], b *batch) error {
	if !p.cfg.Replies {
		return nil
	}
	var rows []store.ReplyRow
	for _, it := range b.items {
		if it.res.Outcome == Processed && it.msg.Reply != nil {
			rows = append(rows, store.ReplyRow{Key: it.row.Key, Reply: it.msg.Reply})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	rk, ok := tx.(store.ReplyKeeper)
	if !ok {
		return errNoReplyKeeper
	}
	return rk.SaveReplies(ctx, rows)
}

// readReplies reads the stored replies of the items found Duplicate
// (Config.Replies), in the claim's transaction.
func (p *Processor[TTx]) readReplies(ctx context.Context, tx store.Tx[TTx], items []*item) error {
	if !p.cfg.Replies {
		return nil
	}
	var dups []*item
	var keys []store.Key
	for _, it := range items {
		if it.res.Outcome == Duplicate {
			dups, keys = append(dups, it), append(keys, it.row.Key)
		}
	}
	if len(dups) == 0 {
		return nil
	}
	rk, ok := tx.(store.ReplyKeeper)
	if !ok {
		return errNoReplyKeeper
	}
	replies, err := rk.Replies(ctx, keys)
	if err != nil {
		return err
	}
	for i, it := range dups {
		it.res.Reply = replies[i]
	}
	return nil
}

// reply is what a later copy of the item in the same batch replays: the
// reply its handler left, or the one its claim read.
func (it *item) reply() []byte {
	if it.res.Outcome == Processed {
		return it.msg.Reply
	}
	return it.res.Reply
}
