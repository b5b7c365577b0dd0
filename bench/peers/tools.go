package peers

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The tools the runner knows.
const (
	ToolSilt   = "silt"
	ToolRclone = "rclone"
	ToolAWS    = "aws"
)

// endpoint is the S3 server as the tools see it: the proxy's address and
// the credentials and region every tool is given.
type endpoint struct {
	url, access, secret, region string
}

// copyOf is one tool's copy of a tree: a local directory and the remote
// bucket and key prefix it syncs with.
type copyOf struct {
	dir, bucket, prefix string
}

// remote returns the copy's remote with sub appended ("" for the whole
// prefix).
func (c copyOf) remote(sub string) string {
	if sub == "" {
		return c.bucket + "/" + c.prefix
	}
	return c.bucket + "/" + c.prefix + "/" + sub
}

// tool is one of the programs compared: how it is invoked for each kind of
// measured operation. Modes: cold is a transfer into an empty destination,
// otherwise it is a re-sync of copies already in sync.
type tool struct {
	name    string
	path    string
	version string
	env     []string
	// bind prepares a copy's directory before its first operation (silt
	// init); nil when the tool keeps no local state.
	bind func(c copyOf) command
	push func(c copyOf, cold bool) command
	// pull syncs the remote of c (under scope, when not "") into its
	// directory.
	pull func(c copyOf, scope string, cold bool) command
	// selfCounts is set when the tool reports its own requests (silt's
	// --json), so they can be compared with the proxy's.
	selfCounts bool
}

func (t *tool) cmd(argv ...string) command {
	return command{argv: append([]string{t.path}, argv...), env: t.env}
}

// baseEnv is the environment every tool starts from: this process's,
// without anything that would point a tool at real AWS credentials or
// configuration. That includes AWS_CA_BUNDLE, with which rclone refuses
// to start.
func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "RCLONE_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func awsEnv(ep endpoint) []string {
	return append(baseEnv(),
		"AWS_ACCESS_KEY_ID="+ep.access, "AWS_SECRET_ACCESS_KEY="+ep.secret,
		"AWS_REGION="+ep.region, "AWS_DEFAULT_REGION="+ep.region,
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true")
}

// newSilt returns the silt CLI at path; encrypt makes every bucket it
// binds an encrypted one (the first bind encrypts it, the others unlock).
func newSilt(path string, ep endpoint, encrypt bool) *tool {
	t := &tool{name: ToolSilt, path: path, selfCounts: true,
		env: append(awsEnv(ep), "AWS_CONFIG_FILE=/dev/null")}
	q := url.Values{"endpoint": {ep.url}, "use_path_style": {"true"}, "region": {ep.region}}
	var enc []string
	if encrypt {
		t.env = append(t.env, "SILT_PASSWORD=silt-peers benchmark passphrase")
		enc = []string{"--encrypt"}
	}
	t.bind = func(c copyOf) command {
		argv := append([]string{"init", "--json", "--force", "--adopt"}, enc...)
		return t.cmd(append(argv, "--dir", c.dir, "s3://"+c.remote("")+"?"+q.Encode())...)
	}
	t.push = func(c copyOf, cold bool) command {
		return t.cmd("push", "--json", "--dir", c.dir, "--max-delete", "-1")
	}
	t.pull = func(c copyOf, scope string, cold bool) command {
		if scope != "" {
			return t.cmd("pull", "--json", "--dir", c.dir, "--scope", scope)
		}
		return t.cmd("pull", "--json", "--dir", c.dir)
	}
	return t
}

// rcloneRemote is the name of the rclone remote defined in the
// environment.
const rcloneRemote = "peers"

// rcloneFlags are rclone's best settings for many small files: one
// recursive listing instead of one per directory, and 16 transfers and
// checkers.
var rcloneFlags = []string{"--fast-list", "--transfers", "16", "--checkers", "16"}

// newRclone returns rclone at path, its remote defined by environment
// variables and no configuration file.
func newRclone(path, scratch string, ep endpoint) *tool {
	env := append(baseEnv(),
		"RCLONE_CONFIG="+filepath.Join(scratch, "rclone.conf"),
		"RCLONE_CONFIG_PEERS_TYPE=s3",
		"RCLONE_CONFIG_PEERS_PROVIDER=Other",
		"RCLONE_CONFIG_PEERS_ENV_AUTH=false",
		"RCLONE_CONFIG_PEERS_ACCESS_KEY_ID="+ep.access,
		"RCLONE_CONFIG_PEERS_SECRET_ACCESS_KEY="+ep.secret,
		"RCLONE_CONFIG_PEERS_ENDPOINT="+ep.url,
		"RCLONE_CONFIG_PEERS_REGION="+ep.region,
		"RCLONE_CONFIG_PEERS_FORCE_PATH_STYLE=true",
	)
	t := &tool{name: ToolRclone, path: path, env: env}
	sync := func(src, dst string, extra ...string) command {
		argv := append([]string{"sync", src, dst}, rcloneFlags...)
		return t.cmd(append(argv, extra...)...)
	}
	t.push = func(c copyOf, cold bool) command {
		// --s3-no-head: no HEAD after each upload; --checksum: compare
		// MD5s (ETags), not modification times, on a re-sync.
		if cold {
			return sync(c.dir, rcloneRemote+":"+c.remote(""), "--s3-no-head")
		}
		return sync(c.dir, rcloneRemote+":"+c.remote(""), "--s3-no-head", "--checksum")
	}
	t.pull = func(c copyOf, scope string, cold bool) command {
		src, dst := rcloneRemote+":"+c.remote(scope), filepath.Join(c.dir, filepath.FromSlash(scope))
		if cold {
			return sync(src, dst)
		}
		return sync(src, dst, "--checksum")
	}
	return t
}

// newAWS returns the AWS CLI at path, as shipped but for path-style
// addressing (required by a server on an IP address) and
// --only-show-errors (one line per file would only measure the terminal).
func newAWS(path, scratch string, ep endpoint) (*tool, error) {
	conf := filepath.Join(scratch, "aws.conf")
	if err := os.WriteFile(conf, []byte("[default]\nregion = "+ep.region+"\ns3 =\n    addressing_style = path\n"), 0o644); err != nil {
		return nil, err
	}
	t := &tool{name: ToolAWS, path: path, env: append(awsEnv(ep), "AWS_CONFIG_FILE="+conf)}
	sync := func(src, dst string) command {
		return t.cmd("--endpoint-url", ep.url, "s3", "sync", src, dst, "--only-show-errors")
	}
	t.push = func(c copyOf, cold bool) command { return sync(c.dir, "s3://"+c.remote("")) }
	t.pull = func(c copyOf, scope string, cold bool) command {
		return sync("s3://"+c.remote(scope), filepath.Join(c.dir, filepath.FromSlash(scope)))
	}
	return t, nil
}

// findTool looks name up on PATH. A pyenv shim is resolved to the program
// it runs, so the measurement does not include pyenv's own start-up.
func findTool(ctx context.Context, name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	if strings.Contains(p, "/.pyenv/shims/") {
		if out, err := exec.CommandContext(ctx, "pyenv", "which", name).Output(); err == nil {
			if real := strings.TrimSpace(string(out)); real != "" {
				return real, nil
			}
		}
	}
	return p, nil
}

// toolVersion returns the first line of the tool's version output.
func toolVersion(ctx context.Context, t *tool) string {
	argv := []string{"version"}
	if t.name == ToolAWS {
		argv = []string{"--version"}
	}
	c := t.cmd(argv...)
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Sprintf("unknown (%v)", err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
