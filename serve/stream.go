package serve

import (
	"encoding/json"
	"net/http"
	"sync"
)

// streamer writes a streamed reply: one JSON event per line, flushed as it
// is written, the operation's result or error last. Events come from the
// Syncer's callbacks, one at a time per operation; the mutex keeps the
// final line after every event even so.
type streamer struct {
	mu  sync.Mutex
	w   http.ResponseWriter
	rc  *http.ResponseController
	bad bool // the client went away: drop the rest
}

func newStreamer(w http.ResponseWriter) *streamer {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	return &streamer{w: w, rc: http.NewResponseController(w)}
}

// emitter returns the function events go to; nil for no stream.
func (s *streamer) emitter() func(event) {
	if s == nil {
		return nil
	}
	return s.write
}

func (s *streamer) write(e event) {
	data, err := json.Marshal(e)
	if err != nil {
		e = event{Error: &Error{Code: CodeInternal, Message: err.Error()}}
		data, _ = json.Marshal(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bad {
		return
	}
	if _, err := s.w.Write(append(data, '\n')); err != nil {
		s.bad = true
		return
	}
	_ = s.rc.Flush() // a writer that cannot flush still delivers at the end
}

// end writes the last line: the result, or the error.
func (s *streamer) end(res any, err error) {
	if err != nil {
		e, _ := toError(err)
		s.write(event{Error: e})
		return
	}
	data, merr := json.Marshal(res)
	if merr != nil {
		e, _ := toError(merr)
		s.write(event{Error: e})
		return
	}
	s.write(event{Result: data})
}
