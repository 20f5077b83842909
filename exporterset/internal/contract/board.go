package contract

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/state"
)

// Board is where the two controllers meet: three memos of the shared Memory, so a set's
// record goes with its set and an instance's with its instance.
type Board struct {
	intents *state.Memo[*Intents]        // per set: its last pass's decisions
	results *state.Memo[Result]          // per instance: what building it last met
	events  *state.Memo[*eventlog.Batch] // per set: the instance controller's events
}

// NewBoard registers the board's memos in mem.
func NewBoard(mem *state.Memory) *Board {
	return &Board{
		intents: state.Register[*Intents](mem, "intents"),
		results: state.Register[Result](mem, "results"),
		events:  state.Register[*eventlog.Batch](mem, "instanceEvents"),
	}
}

// Publish replaces the set's decisions (the set controller).
func (b *Board) Publish(set string, d *Intents) { b.intents.PutSet(set, d) }

// Withdraw forgets the set's decisions: until a pass decides again, the instance controller
// builds nothing new for the set.
func (b *Board) Withdraw(set string) { b.intents.DropSet(set) }

// Decisions returns the set's last published decisions.
func (b *Board) Decisions(set string) (*Intents, bool) { return b.intents.ForSet(set) }

// Result is what building the instance uid of set last met.
func (b *Board) Result(set string, uid types.UID) (Result, bool) {
	return b.results.ForInstance(set, uid)
}

// PutResult records what building an instance met (the instance controller), and reports
// whether it differs from what was recorded before: the set's conditions change then.
func (b *Board) PutResult(set string, uid types.UID, res Result) bool {
	last, ok := b.results.ForInstance(set, uid)
	b.results.PutInstance(set, uid, res)
	if !ok {
		return res.CredMissing != "" || res.PodErr != nil
	}
	return !Same(last, res)
}

// EventsFor returns the batch the instance controller adds the set's events to; the set's
// next pass records them with its own (TakeEvents), so a scale-up still makes one event per
// pass and reason.
func (b *Board) EventsFor(set string) *eventlog.Batch {
	return b.events.SetOrPut(set, func() *eventlog.Batch { return &eventlog.Batch{} })
}

// TakeEvents moves the instance controller's events of a set into a pass's.
func (b *Board) TakeEvents(set string, into *eventlog.Batch) {
	if from, ok := b.events.ForSet(set); ok {
		from.MoveTo(into)
	}
}
