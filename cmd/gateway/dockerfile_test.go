package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// repoRoot is the build context of the Dockerfile, relative to this package.
const repoRoot = "../.."

// TestDockerfile_StartsAsDocumented builds the binary with the Dockerfile's own `go build`
// command and runs it the way the image does: the final stage's ENV, ENTRYPOINT and CMD,
// with the files it COPYs placed under a temporary directory standing in for the image's
// root. Only the listen address is changed, the documented way (GATEWAY_SERVER__LISTEN),
// to a free loopback port. The gateway must answer /healthz and a demo chat completion
// from the official SDK, and stop cleanly on SIGTERM.
func TestDockerfile_StartsAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	df := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
	if len(df.stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a runtime stage", len(df.stages))
	}
	build, final := df.stages[0], df.stages[len(df.stages)-1]
	checkGoImage(t, build.from)

	// The build stage copies the whole context; its `go build` output lands in buildRoot.
	buildRoot, _ := imageBinary(t)
	imageRoot := t.TempDir()

	for _, c := range final.copies {
		if len(c.srcs) != 1 || strings.HasSuffix(c.dest, "/") {
			t.Fatalf("runtime stage COPY %v %s: this test handles one file copied to a file path", c.srcs, c.dest)
		}
		src := filepath.Join(repoRoot, c.srcs[0])
		if c.from != "" {
			if c.from != build.name {
				t.Fatalf("COPY --from=%s: unknown stage (the build stage is %q)", c.from, build.name)
			}
			src = filepath.Join(buildRoot, c.srcs[0])
		}
		copyFile(t, src, filepath.Join(imageRoot, c.dest))
	}
	if final.user == "" || final.user == "root" || strings.HasPrefix(final.user, "0") {
		t.Errorf("runtime stage USER = %q, want a non-root user", final.user)
	}

	// Paths in ENV, ENTRYPOINT and CMD are paths inside the image.
	inImage := func(v string) string {
		if filepath.IsAbs(v) {
			return filepath.Join(imageRoot, v)
		}
		return v
	}
	var environ []string
	for _, kv := range final.env {
		name, value, _ := strings.Cut(kv, "=")
		environ = append(environ, name+"="+inImage(value))
	}
	argv := append(slices.Clone(final.entrypoint), final.cmd...)
	if len(argv) == 0 {
		t.Fatal("runtime stage has no ENTRYPOINT or CMD")
	}
	for i := range argv {
		argv[i] = inImage(argv[i])
	}

	// The image serves on the port it EXPOSEs.
	cfg, err := config.Load(inImage(envValue(final.env, config.EnvConfigPath)), environ)
	if err != nil {
		t.Fatalf("the image's config does not load with the image's environment: %v", err)
	}
	_, port, err := net.SplitHostPort(cfg.Server.Listen)
	if err != nil {
		t.Fatalf("server.listen %q: %v", cfg.Server.Listen, err)
	}
	if !slices.Contains(final.expose, port) && !slices.Contains(final.expose, port+"/tcp") {
		t.Errorf("the image listens on port %s but EXPOSEs %v", port, final.expose)
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = inImage(final.workdir)
	cmd.Env = append(environ, "GATEWAY_SERVER__LISTEN=127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs gatewaytest.Buffer
	cmd.Stdout = &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	exited := make(chan error, 1)
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Bytes()
			logs.Write([]byte(sc.Text() + "\n"))
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "agate listening" {
				listening <- rec.Addr
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})

	var addr string
	select {
	case addr = <-listening:
	case err := <-exited:
		t.Fatalf("the gateway exited before listening: %v\n%s", err, logs.String())
	case <-time.After(waitLimit):
		t.Fatalf("the gateway did not start listening within %v\n%s", waitLimit, logs.String())
	}
	base := "http://" + addr

	eventually(t, "/healthz to answer 200", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	client := gatewaytest.OpenAI(base+"/v1/", "unused", option.WithRequestTimeout(waitLimit))
	// The image's environment holds no upstream keys: only the offline demo model is usable.
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatalf("listing models: %v", err)
	}
	var listed []string
	for _, m := range page.Data {
		listed = append(listed, m.ID)
	}
	if !slices.Equal(listed, []string{"demo"}) {
		t.Errorf("/v1/models lists %v, want [demo] (no upstream keys are set)", listed)
	}
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "demo",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello from the image")},
	})
	if err != nil {
		t.Fatalf("demo chat completion: %v\n%s", err, logs.String())
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" || resp.Model != "demo" {
		t.Errorf("demo chat completion = %s", resp.RawJSON())
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the gateway exited with %v after SIGTERM\n%s", err, logs.String())
		}
	case <-time.After(waitLimit):
		t.Fatalf("the gateway did not exit within %v of SIGTERM\n%s", waitLimit, logs.String())
	}
	if !strings.Contains(logs.String(), `"msg":"stopped"`) {
		t.Errorf("no clean stop in the log:\n%s", logs.String())
	}
}

// waitLimit bounds each wait for the gateway process; it is a deadline, not a sleep.
const waitLimit = 60 * time.Second

// dockerfile is the part of a Dockerfile this test understands.
type dockerfile struct {
	stages []*stage
}

type stage struct {
	from, name string
	args       map[string]string // ARG defaults
	env        []string          // NAME=value, in order
	runs       [][]string        // shell words of each RUN
	copies     []dockerCopy
	workdir    string
	user       string
	expose     []string
	entrypoint []string
	cmd        []string
}

type dockerCopy struct {
	from string
	srcs []string
	dest string
}

// parseDockerfile reads the instructions this test needs. It fails the test on anything it
// cannot interpret, so that a Dockerfile change cannot slip past it unnoticed.
func parseDockerfile(t *testing.T, path string) *dockerfile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	df := &dockerfile{}
	var st *stage
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		instr = strings.ToUpper(instr)
		if instr != "FROM" && st == nil {
			t.Fatalf("Dockerfile line %d: %s before FROM", n+1, instr)
		}
		switch instr {
		case "FROM":
			words := strings.Fields(rest)
			st = &stage{from: words[0], args: map[string]string{}, workdir: "/"}
			if len(words) == 3 && strings.EqualFold(words[1], "AS") {
				st.name = words[2]
			}
			df.stages = append(df.stages, st)
		case "ARG":
			name, def, _ := strings.Cut(rest, "=")
			st.args[name] = def
		case "ENV":
			if !strings.Contains(rest, "=") {
				name, value, _ := strings.Cut(rest, " ")
				st.env = append(st.env, name+"="+strings.TrimSpace(value))
				break
			}
			for _, kv := range shellWords(t, rest, nil) {
				st.env = append(st.env, kv)
			}
		case "RUN":
			st.runs = append(st.runs, shellWords(t, rest, st.args))
		case "COPY":
			words := strings.Fields(rest)
			var c dockerCopy
			for len(words) > 0 && strings.HasPrefix(words[0], "--") {
				if from, ok := strings.CutPrefix(words[0], "--from="); ok {
					c.from = from
				}
				words = words[1:]
			}
			if len(words) < 2 {
				t.Fatalf("Dockerfile line %d: COPY needs a source and a destination", n+1)
			}
			c.srcs, c.dest = words[:len(words)-1], words[len(words)-1]
			st.copies = append(st.copies, c)
		case "WORKDIR":
			st.workdir = rest
		case "USER":
			st.user = rest
		case "EXPOSE":
			st.expose = append(st.expose, strings.Fields(rest)...)
		case "ENTRYPOINT":
			st.entrypoint = execForm(t, n+1, rest)
		case "CMD":
			st.cmd = execForm(t, n+1, rest)
		case "LABEL", "HEALTHCHECK", "STOPSIGNAL":
		default:
			t.Fatalf("Dockerfile line %d: instruction %s is not understood by this test", n+1, instr)
		}
	}
	return df
}

// execForm parses the JSON array form of ENTRYPOINT and CMD (the shell form would need a
// shell, which a distroless image does not have).
func execForm(t *testing.T, line int, s string) []string {
	t.Helper()
	var argv []string
	if err := json.Unmarshal([]byte(s), &argv); err != nil {
		t.Fatalf("Dockerfile line %d: want the exec (JSON array) form: %v", line, err)
	}
	return argv
}

// shellWords splits s as a POSIX shell would for the simple commands of a Dockerfile:
// single and double quotes, and $NAME / ${NAME} from vars (outside single quotes).
func shellWords(t *testing.T, s string, vars map[string]string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == 0 && (c == ' ' || c == '\t'):
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			continue
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case c == quote:
			quote = 0
		case c == '$' && quote != '\'' && vars != nil:
			name, n := "", 0
			if strings.HasPrefix(s[i:], "${") {
				end := strings.IndexByte(s[i:], '}')
				if end < 0 {
					t.Fatalf("unterminated ${ in %q", s)
				}
				name, n = s[i+2:i+end], end
			} else {
				j := i + 1
				for j < len(s) && (s[j] == '_' || 'A' <= s[j] && s[j] <= 'Z' || 'a' <= s[j] && s[j] <= 'z' || '0' <= s[j] && s[j] <= '9') {
					j++
				}
				name, n = s[i+1:j], j-i-1
			}
			v, ok := vars[name]
			if !ok {
				t.Fatalf("$%s in %q is not an ARG of the stage", name, s)
			}
			w.WriteString(v)
			i += n
		default:
			w.WriteByte(c)
		}
		inWord = true
	}
	if quote != 0 {
		t.Fatalf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// runGoBuild runs the build stage's `go build` command in the repository root (the stage
// copies the build context to its WORKDIR), with its -o output placed under root, and
// returns the output's path. The command writes its output to cache (a directory kept
// between runs), which is then linked under root: go build leaves a target whose build ID
// is already the one it would link alone, so a test run after an unchanged build pays no
// link of the gateway (about 1.5 s of CPU, #54); root itself is new each run, so it holds
// only what this build wrote.
func runGoBuild(st *stage, root, cache string) (string, error) {
	for _, words := range st.runs {
		i := slices.Index(words, "go")
		if i < 0 || i+1 >= len(words) || words[i+1] != "build" {
			continue
		}
		env := os.Environ()
		for _, w := range words[:i] {
			if !strings.Contains(w, "=") {
				return "", fmt.Errorf("RUN %v: only VAR=value may precede go build", words)
			}
			env = append(env, w)
		}
		args := slices.Clone(words[i+1:])
		o := slices.Index(args, "-o")
		if o < 0 || o+1 >= len(args) {
			return "", fmt.Errorf("RUN %v: go build has no -o", words)
		}
		dst := filepath.Join(root, args[o+1])
		args[o+1] = filepath.Join(cache, "gateway")
		cmd := exec.Command("go", args...)
		cmd.Dir = repoRoot
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		// A hard link: a later build replaces the cache's entry by a rename, not in place.
		if err := os.Link(args[o+1], dst); err != nil {
			return "", err
		}
		return dst, nil
	}
	return "", errors.New("the build stage has no RUN go build")
}

// imageBuild is the gateway binary the Dockerfile's build stage makes, built once per test
// process (imageBinary) and removed by TestMain: the tests that run the binary share the
// image's own build instead of compiling the module once more each.
var imageBuild struct {
	once      sync.Once
	root, bin string // the build stage's output root, and the binary in it
	err       error
}

// imageBinary builds the gateway as the Dockerfile does (the first time) and returns the
// build stage's output root and the binary's path.
func imageBinary(t *testing.T) (root, bin string) {
	t.Helper()
	imageBuild.once.Do(func() {
		// Kept if parseDockerfile ends this test (t.Fatal): the tests after it fail too.
		imageBuild.err = errors.New("building the image's binary failed in an earlier test")
		df := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
		if len(df.stages) < 2 {
			imageBuild.err = fmt.Errorf("Dockerfile has %d stages, want a build stage and a runtime stage", len(df.stages))
			return
		}
		if imageBuild.root, imageBuild.err = os.MkdirTemp("", "agate-image-"); imageBuild.err != nil {
			return
		}
		var cache string
		if cache, imageBuild.err = imageBuildCache(); imageBuild.err != nil {
			return
		}
		imageBuild.bin, imageBuild.err = runGoBuild(df.stages[0], imageBuild.root, cache)
	})
	if imageBuild.err != nil {
		t.Fatal(imageBuild.err)
	}
	return imageBuild.root, imageBuild.bin
}

// imageBuildCache returns the directory imageBinary's builds of this checkout write to,
// kept in the temporary directory between test runs (one per checkout: its path hashed)
// and created mode 0700 when missing.
func imageBuildCache() (string, error) {
	abs, err := filepath.Abs(repoRoot)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	dir := filepath.Join(os.TempDir(), "agate-image-build-"+hex.EncodeToString(sum[:8]))
	return dir, os.MkdirAll(dir, 0o700)
}

// TestMain runs the test binary as an MCP server when asked (runAsMCPServer), else the
// tests, then removes the binary imageBinary built.
func TestMain(m *testing.M) {
	runAsMCPServer()
	code := m.Run()
	if imageBuild.root != "" {
		os.RemoveAll(imageBuild.root)
	}
	os.Exit(code)
}

// checkGoImage checks that a golang build image can build this module: the image sets
// GOTOOLCHAIN=local, so its Go must be at least go.mod's go version.
func checkGoImage(t *testing.T, from string) {
	t.Helper()
	tag, ok := strings.CutPrefix(from, "golang:")
	if !ok {
		t.Fatalf("build stage FROM %s: want a golang image", from)
	}
	tag, _, _ = strings.Cut(tag, "-") // golang:1.26-bookworm
	data, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			want = strings.TrimSpace(v)
		}
	}
	// A tag without a patch version floats to the newest patch release.
	have, need := versionParts(t, tag), versionParts(t, want)
	if len(have) == 2 {
		need = need[:min(len(need), 2)]
	}
	if slices.Compare(have, need) < 0 {
		t.Errorf("build stage FROM %s cannot build a module that needs go %s", from, want)
	}
}

func versionParts(t *testing.T, v string) []int {
	t.Helper()
	var parts []int
	for p := range strings.SplitSeq(v, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("version %q: %v", v, err)
		}
		parts = append(parts, n)
	}
	return parts
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

func copyFile(t *testing.T, src, dest string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatalf("COPY: %v", err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	// The image runs as a non-root user, and COPY keeps the file's mode with root as owner.
	if info.Mode().Perm()&0o004 == 0 {
		t.Errorf("COPY %s: mode %v is not readable by the image's non-root user", src, info.Mode().Perm())
	}
}
