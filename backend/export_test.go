package backend

import (
	"context"
	"time"
)

// RetryWithSleep is Retry with sleep in place of the timer, so tests run
// without waiting and can see the backoffs chosen.
func RetryWithSleep(b Backend, cfg RetryConfig, sleep func(context.Context, time.Duration) error) Backend {
	r := Retry(b, cfg).(*retrying)
	r.sleep = sleep
	return r
}

// Under is under: the layer below, the driver below a Portable included.
var Under = under
