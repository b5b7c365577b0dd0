package syncer

import (
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// writer is group commit for the state database. Each bbolt write
// transaction ends in two fdatasyncs, and write transactions run one at a
// time, so seven host steps at once (each marking, pulling and pushing)
// queued behind one another's syncs. An update that finds none running
// runs at once, in its own transaction, with no added delay (unlike
// bolt.DB.Batch, which waits for company); updates that arrive while one
// runs queue, and the next transaction runs all of them, in arrival order,
// as one. So the state ends as if they had run one after the other.
//
// If a shared transaction fails (an update returned an error, or the
// commit did), it is rolled back and each of its updates runs again
// alone, so each caller gets its own result and one failing update does
// not undo the others.
type writer struct {
	mu      sync.Mutex
	running bool       // a leader is committing
	queue   []*pending // waiting for the next transaction
}

type pending struct {
	fn   func(t stx) error
	done chan error    // buffered: the runner never waits on a caller
	lead chan struct{} // buffered: this waiter commits the next group
}

func (w *writer) run(db *bolt.DB, fn func(t stx) error) error {
	me := &pending{fn: fn, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	w.mu.Lock()
	w.queue = append(w.queue, me)
	if w.running {
		w.mu.Unlock()
		select {
		case err := <-me.done:
			return err
		case <-me.lead: // the queue, with me first, is mine to commit
		}
		w.mu.Lock()
	}
	w.running = true
	group := w.queue
	w.queue = nil
	w.mu.Unlock()
	// A leader commits one group, its own, then hands on: its caller
	// never waits for transactions that are not its own.
	defer w.handOff()
	commitGroup(db, group)
	return <-me.done
}

// handOff makes the first waiter the next leader, or ends leadership.
func (w *writer) handOff() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		w.running = false
		return
	}
	w.queue[0].lead <- struct{}{}
}

// commitGroup runs group as one transaction, or, if that fails, each
// update alone. Every update's done receives exactly one value, even if
// one panics (the panic then goes on in this goroutine).
func commitGroup(db *bolt.DB, group []*pending) {
	sent := 0
	defer func() {
		if v := recover(); v != nil {
			for _, p := range group[sent:] {
				p.done <- fmt.Errorf("syncer: state update aborted: %v", v)
			}
			panic(v)
		}
	}()
	if len(group) > 1 {
		err := db.Update(func(tx *bolt.Tx) error {
			for _, p := range group {
				if err := p.fn(stx{tx}); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			for _, p := range group {
				p.done <- nil
				sent++
			}
			return
		}
	}
	for _, p := range group {
		err := db.Update(func(tx *bolt.Tx) error { return p.fn(stx{tx}) })
		p.done <- err
		sent++
	}
}
