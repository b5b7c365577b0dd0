package main

// The stores this command ships: each blank import registers its URL
// scheme with backend.Open. This is the one place that lists them, and
// the one place that says how the command opens them.
import (
	"context"
	"flag"

	"github.com/siltsync/silt/backend"
	_ "github.com/siltsync/silt/backend/blob" // blob+mem://, blob+azblob:// (the gocloud drivers that are linked)
	_ "github.com/siltsync/silt/backend/fs"   // file://
	_ "github.com/siltsync/silt/backend/gcs"  // gs://
	_ "github.com/siltsync/silt/backend/mem"  // mem:// (per process: for trying things out)
	_ "github.com/siltsync/silt/backend/s3"   // s3://
)

// timeoutFlag declares --timeout, which every command has because every
// command may open a store.
func timeoutFlag(fs *flag.FlagSet, c *cli) {
	fs.DurationVar(&c.timeout, "timeout", backend.DefaultTimeout,
		"fail a store request that makes no progress for this long (a URL's ?timeout= wins)")
}

type cliKey struct{}

// withCLI lets openURL, which only has a context, see the command's flags.
func withCLI(ctx context.Context, c *cli) context.Context {
	return context.WithValue(ctx, cliKey{}, c)
}

// openOptions are the backend.Open options the command's flags ask for.
func openOptions(ctx context.Context) []backend.Option {
	c, _ := ctx.Value(cliKey{}).(*cli)
	if c == nil || c.timeout == 0 {
		return nil
	}
	return []backend.Option{backend.WithTimeout(c.timeout)}
}
