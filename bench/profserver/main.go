// Command profserver is cmd/continuo with an optional CPU profile, for
// `go run ./bench -cpuprofile PREFIX`: when CONTINUO_BENCH_CPUPROFILE names
// a file, the whole run of the command is profiled into it, and when
// CONTINUO_BENCH_MEMPROFILE names one, the allocation profile is written
// there at exit. Everything else
// is exactly cmd/continuo (it calls the same cli.Main).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/continuo-dev/continuo/internal/cli"
)

func main() {
	if path := os.Getenv("CONTINUO_BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "profserver:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "profserver:", err)
			os.Exit(1)
		}
		defer f.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	pprof.StopCPUProfile()
	if path := os.Getenv("CONTINUO_BENCH_MEMPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	if code != 0 {
		os.Exit(code)
	}
}
