// Command silt-faultproxy runs the fault-injecting reverse proxy of
// internal/faultproxy in front of an S3 server, for trying silt (or any
// client) against transient faults by hand and in .ci/run:
//
//	silt-faultproxy -target http://127.0.0.1:7070 -listen 127.0.0.1:7071 \
//	    -rates 503=0.2,reset-before=0.05,reset-after=0.05,cut=0.1,stall=0.03
//
// It prints the address it listens on, then, when interrupted (SIGINT or
// SIGTERM), the counts of requests and of each fault injected, as JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/siltsync/silt/internal/faultproxy"
)

func main() {
	target := flag.String("target", "", "server to forward to, http://host:port")
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	rates := flag.String("rates", "", "faults and their shares of requests: 503=0.2,429=0.05,reset-before=0.05,reset-after=0.05,stall=0.03,cut=0.1,delay=0.1")
	delay := flag.Duration("delay", 5*time.Second, "how long a delay fault waits")
	stall := flag.Duration("stall", 2*time.Minute, "how long a stall holds a connection at most")
	seed := flag.Uint64("seed", 1, "seed of the fault draws")
	flag.Parse()
	if err := run(*target, *listen, *rates, *delay, *stall, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "silt-faultproxy:", err)
		os.Exit(1)
	}
}

func run(target, listen, rates string, delay, stall time.Duration, seed uint64) error {
	r, err := faultproxy.ParseRates(rates)
	if err != nil {
		return err
	}
	p, err := faultproxy.New(faultproxy.Config{Target: target, Rates: r, Delay: delay, StallFor: stall, Seed: seed})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: p, ReadHeaderTimeout: time.Minute}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close() // held connections included: a stall must not delay exit
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(p.Counts())
}
