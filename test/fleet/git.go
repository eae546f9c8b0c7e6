package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// LocalGitRepo is a git repository on the local disk that Argo CD's repo-server reads
// through a file:// URL (Argo CD's own end-to-end tests use file:// repositories too).
type LocalGitRepo struct {
	// Dir is the working tree; URL is "file://" + Dir.
	Dir string
	URL string
}

// NewLocalGitRepo creates a git repository in dir (which must not exist or be empty)
// with files (path relative to the repository -> content) committed on branch main.
func NewLocalGitRepo(dir string, files map[string]string) (*LocalGitRepo, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("git is not installed (apt-get install -y git): %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	r := &LocalGitRepo{Dir: abs, URL: "file://" + abs}
	if err := r.git("init", "--quiet", "--initial-branch=main"); err != nil {
		return nil, err
	}
	if err := r.Commit("initial", files); err != nil {
		return nil, err
	}
	return r, nil
}

// Commit writes files (an empty content removes the file) and commits them.
func (r *LocalGitRepo) Commit(message string, files map[string]string) error {
	for name, content := range files {
		path := filepath.Join(r.Dir, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := r.git("add", "--all"); err != nil {
		return err
	}
	return r.git("commit", "--quiet", "--allow-empty", "-m", message)
}

// Head is the commit main points at.
func (r *LocalGitRepo) Head() (string, error) {
	out, err := r.output("rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

func (r *LocalGitRepo) git(args ...string) error {
	_, err := r.output(args...)
	return err
}

func (r *LocalGitRepo) output(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	// A fixed identity, and no user or system configuration leaking in.
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=fleet", "GIT_AUTHOR_EMAIL=fleet@example.com",
		"GIT_COMMITTER_NAME=fleet", "GIT_COMMITTER_EMAIL=fleet@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), r.Dir, err, out)
	}
	return string(out), nil
}
