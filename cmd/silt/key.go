package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/siltsync/silt/backend/seal"
	"github.com/siltsync/silt/internal/crypt"
)

func init() { commands = append(commands, keyCmd) }

// envNewPassword is the new passphrase of key add and key rotate when no
// --new-password-file is given (restic's RESTIC_NEW_PASSWORD).
const envNewPassword = "SILT_NEW_PASSWORD"

var keyCmd = &command{
	name:    "key",
	args:    "list|add|rotate|remove [ID] [URL]",
	summary: "list, add, rotate and remove the passphrases of an encrypted bucket (its key files under .silt/keys/); the data is never rewritten",
	example: "silt key list s3://my-bucket\n" +
		"SILT_PASSWORD=old SILT_NEW_PASSWORD=ci silt key add --label ci s3://my-bucket\n" +
		"silt key rotate --password-file old.txt --new-password-file new.txt s3://my-bucket   # replaces the key that opened it\n" +
		"silt key remove 3f9c0a1b2c3d4e5f s3://my-bucket",
	minArgs: 1, maxArgs: 3,
	complete: func(args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return []string{"list", "add", "rotate", "remove"}, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	},
	setup: func(c *cli, fs *flag.FlagSet) runFunc {
		_, dir := bucketFlags(fs, "")
		newFile := fs.String("new-password-file", "", "add, rotate: a `FILE` holding the new passphrase (default: $"+envNewPassword+")")
		label := fs.String("label", "", "add: whose key this is, shown by list (default user@host); never a secret")
		return func(ctx context.Context, pos []string) error {
			return runKey(ctx, c, dir, *newFile, *label, pos)
		}
	},
}

func newPassphrase(file string) ([]byte, error) {
	if file != "" {
		p, err := crypt.ReadPassphraseFile(file)
		if err != nil {
			return nil, usagef("--new-password-file: %v", err)
		}
		return p, nil
	}
	if v := os.Getenv(envNewPassword); v != "" {
		return []byte(v), nil
	}
	return nil, usagef("the new passphrase: pass --new-password-file FILE or set %s", envNewPassword)
}

func runKey(ctx context.Context, c *cli, dir *string, newFile, label string, pos []string) error {
	action, rest := pos[0], pos[1:]
	id := ""
	switch action {
	case "list", "add", "rotate":
	case "remove":
		if len(rest) == 0 {
			return usagef("key remove needs the ID of the key file (silt key list shows them)")
		}
		id, rest = rest[0], rest[1:]
	default:
		return usagef("unknown key action %q: want list, add, rotate or remove", action)
	}
	if len(rest) > 1 {
		return usagef("too many arguments")
	}
	ns := ""
	ob, err := c.openBucket(ctx, &ns, dir, rest, 0, 1, true)
	if err != nil {
		return err
	}
	defer ob.Close()
	st := seal.Of(ob.b)
	raw := ob.b
	if st != nil {
		raw = st.Unwrap()
	}
	encrypted, err := seal.Encrypted(ctx, raw)
	if err != nil {
		return err
	}
	if !encrypted {
		return &refusedError{msg: fmt.Sprintf("%s is not encrypted", ob.url), hint: "encrypt an empty bucket with: silt init --encrypt URL"}
	}
	if action != "list" && st == nil {
		return withHint(fmt.Errorf("key %s: the bucket's passphrase is needed", action),
			"set "+crypt.PassphraseEnv+" or pass --password-file FILE with a passphrase the bucket knows")
	}
	switch action {
	case "list":
		files, bad, err := seal.Keys(ctx, raw)
		if err != nil {
			return err
		}
		return c.result(map[string]any{"op": "key list", "keys": keyRows(files, st), "malformed": bad}, func() {
			for _, r := range keyRows(files, st) {
				mark := " "
				if r.Current {
					mark = "*"
				}
				c.printf("%s %s  %s  %s\n", mark, r.ID, r.Created.Format(time.DateTime), r.Label)
			}
			if bad > 0 {
				c.printf("%d malformed key file%s left out\n", bad, plural(int64(bad)))
			}
		})
	case "add", "rotate":
		p, err := newPassphrase(newFile)
		if err != nil {
			return err
		}
		var kf *crypt.KeyFile
		if action == "add" {
			if label == "" {
				label = keyLabel()
			}
			kf, err = seal.AddKey(ctx, raw, st.Ring(), p, crypt.DefaultKDFParams, label)
		} else {
			kf, err = seal.Rotate(ctx, raw, st.Ring(), st.KeyFile(), p, crypt.DefaultKDFParams)
		}
		if err != nil {
			return err
		}
		return c.result(map[string]any{"op": "key " + action, "id": kf.ID, "replaced": replaced(action, st)}, func() {
			if action == "rotate" {
				c.printf("key %s replaces %s; the old passphrase no longer opens %s\n", kf.ID, st.KeyFile().ID, ob.url)
				return
			}
			c.printf("added key %s (%s)\n", kf.ID, kf.Label)
		})
	default:
		if st.KeyFile() != nil && st.KeyFile().ID == id {
			return &refusedError{msg: fmt.Sprintf("key %s is the one this command opened the bucket with", id),
				hint: "remove it with another passphrase, or replace it with: silt key rotate"}
		}
		if err := seal.RemoveKey(ctx, raw, id); err != nil {
			return err
		}
		return c.result(map[string]any{"op": "key remove", "id": id}, func() { c.printf("removed key %s\n", id) })
	}
}

func replaced(action string, st *seal.Store) string {
	if action == "rotate" && st.KeyFile() != nil {
		return st.KeyFile().ID
	}
	return ""
}

// keyRow is one key file as key list shows it.
type keyRow struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Label   string    `json:"label,omitempty"`
	Current bool      `json:"current,omitempty"` // the key that opened the bucket for this command
}

func keyRows(files []*crypt.KeyFile, st *seal.Store) []keyRow {
	var out []keyRow
	for _, f := range files {
		cur := st != nil && st.KeyFile() != nil && st.KeyFile().ID == f.ID
		out = append(out, keyRow{ID: f.ID, Created: f.Created, Label: f.Label, Current: cur})
	}
	return out
}
