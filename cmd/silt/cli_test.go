package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlags_BadFlagBeforeJSON_OneJSONObject checks that flags are parsed
// in any position: a bad flag before --json still yields the JSON error.
func TestFlags_BadFlagBeforeJSON_OneJSONObject(t *testing.T) {
	r := silt(t, "push", "--bogus", "--json")
	wantCode(t, r, exitUsage, "push --bogus --json")
	v := object(t, r)
	if v["exit"] != float64(exitUsage) || !strings.Contains(v["error"].(string), "--bogus") || v["op"] != "push" {
		t.Errorf("push --bogus --json: %v", v)
	}
}

// TestDir_EveryCacheCommand_TakesDir checks --dir on every command that has
// a cache: the bucket commands read the bucket its binding names.
func TestDir_EveryCacheCommand_TakesDir(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "data/x", "x")
	ok(t, "push", "--dir", a)
	elsewhere := t.TempDir()
	for _, args := range [][]string{
		{"ls", "--dir", a}, {"cat", "--dir", a, "data/x"}, {"log", "--dir", a}, {"check", "--dir", a},
		{"export", "--dir", a, filepath.Join(elsewhere, "out")}, {"gc", "--dry-run", "--dir", a}, {"verify", "--dir", a},
		{"status", "--dir", a}, {"pull", "--dir", a}, {"lock", "inspect", "--dir", a, "k"},
	} {
		r := siltAt(t, elsewhere, nil, args...)
		wantCode(t, r, 0, args...)
		if args[0] == "cat" && r.stdout != "x" {
			t.Errorf("cat --dir: %q", r.stdout)
		}
	}
}

// TestPush_MaxDeleteZero_MeansNoLimit checks --max-delete 0 means what
// maxDelete 0 means in the library and the serve API: no limit.
func TestPush_MaxDeleteZero_MeansNoLimit(t *testing.T) {
	_, dirs := setup(t, 1)
	a := dirs[0]
	write(t, a, "a", "1")
	write(t, a, "b", "2")
	ok(t, "push", "--dir", a)
	os.Remove(filepath.Join(a, "a"))
	os.Remove(filepath.Join(a, "b"))
	wantCode(t, silt(t, "push", "--dir", a, "--max-delete", "1"), exitRefused, "push --max-delete 1")
	v := object(t, ok(t, "push", "--dir", a, "--max-delete", "0", "--json"))
	if num(v, "files", "deleted") != 2 {
		t.Errorf("push --max-delete 0 deleted %v, want 2", v["files"])
	}
}

// TestCompletion_Bash_CompletesSubcommands sources silt completion bash
// in bash and completes "silt pu".
func TestCompletion_Bash_CompletesSubcommands(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := ok(t, "completion", "bash").stdout
	f := filepath.Join(t.TempDir(), "silt.bash")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// _get_comp_words_by_ref comes from the bash-completion package that
	// users' shells load; without it, a minimal stand-in.
	prog := `if [ -r /usr/share/bash-completion/bash_completion ]; then source /usr/share/bash-completion/bash_completion
else _get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }; fi
compopt() { :; } # a builtin that works only inside a completion the shell started
source "$1"
COMP_WORDS=(silt pu); COMP_CWORD=1; COMP_LINE="silt pu"; COMP_POINT=${#COMP_LINE}
__start_silt silt pu silt
printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog, "bash", f)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(siltBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	got := strings.Fields(string(out))
	if strings.Join(got, " ") != "pull push" {
		t.Errorf("silt pu<TAB> completes to %q, want [pull push]", got)
	}
}

// TestCompletion_URL_CompletesSchemesAndFileDirs checks the URL argument
// completes to schemes and, under file://, to directories.
func TestCompletion_URL_CompletesSchemesAndFileDirs(t *testing.T) {
	r := ok(t, "__complete", "ls", "s")
	if !strings.Contains(r.stdout, "s3://\n") {
		t.Errorf("ls s<TAB>:\n%s", r.stdout)
	}
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "bucket"), 0o755)
	r = ok(t, "__complete", "ls", "file://"+filepath.ToSlash(root)+"/bu")
	if !strings.Contains(r.stdout, "file://"+filepath.ToSlash(root)+"/bucket/\n") {
		t.Errorf("ls file://.../bu<TAB>:\n%s", r.stdout)
	}
	for _, shell := range []string{"zsh", "fish", "powershell"} {
		if r := ok(t, "completion", shell); !strings.Contains(r.stdout, "silt") {
			t.Errorf("completion %s prints no script", shell)
		}
	}
}
