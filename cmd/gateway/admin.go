package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// adminUsage is the help of `gateway admin`.
const adminUsage = `usage: gateway admin <command> [flags]

  keys list
  keys create --name NAME [--models a,b] [--tools t] [--team T] [--budget-usd F] [--budget-tokens N]
              [--budget-period 720h] [--rpm N] [--tpm N] [--concurrent N] [--expires RFC3339]
  keys get NAME | keys disable NAME | keys delete NAME | keys rotate NAME [--grace 1h]
  teams list | teams get NAME | teams delete NAME
  teams create --name NAME [--models a,b] [--budget-usd F] [--budget-tokens N]
               [--budget-period 720h] [--rpm N] [--tpm N] [--concurrent N]
  teams update NAME [the flags of create but --name: only those given change]
  usage [--from DATE] [--to DATE] [--group-by key,day] [--csv]
  requests [--key K] [--limit N] [--cursor C]

The gateway's admin API (docs/admin-api.md) at AGATE_ADMIN_URL (default
http://127.0.0.1:8080) with the admin token in AGATE_ADMIN_TOKEN (an environment
variable, never a flag: flags show in the process list).`

// runAdmin is `gateway admin ...`: a client of the admin API that prints its answers.
func runAdmin(args, environ []string, stdout, stderr io.Writer) error {
	base := lookup(environ, "AGATE_ADMIN_URL", "http://127.0.0.1:8080")
	token := lookup(environ, "AGATE_ADMIN_TOKEN", "")
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stdout, adminUsage)
		return nil
	}
	if token == "" {
		return errors.New("admin: set AGATE_ADMIN_TOKEN to the admin token")
	}
	method, path, body, err := adminRequest(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("admin: reading the answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("admin: %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(out))
	}
	if len(out) > 0 {
		stdout.Write(out)
		if out[len(out)-1] != '\n' {
			fmt.Fprintln(stdout)
		}
	}
	return nil
}

// adminRequest maps a command line to its API request.
func adminRequest(args []string, stderr io.Writer) (method, path string, body []byte, err error) {
	cmd := args[0]
	if (cmd == "keys" || cmd == "teams") && len(args) > 1 {
		cmd, args = cmd+" "+args[1], args[1:]
	}
	fs := flag.NewFlagSet("gateway admin "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "key or team name")
	models := fs.String("models", "", "comma-separated model globs")
	tools := fs.String("tools", "", "comma-separated tool names")
	team := fs.String("team", "", "team")
	fs.Float64("budget-usd", 0, "USD budget per period")
	fs.Int("budget-tokens", 0, "token budget per period")
	fs.String("budget-period", "", "budget period (default 720h)")
	fs.Int("rpm", 0, "requests per minute")
	fs.Int("tpm", 0, "tokens per minute")
	fs.Int("concurrent", 0, "concurrent requests")
	expires := fs.String("expires", "", "expiry, RFC 3339")
	grace := fs.String("grace", "", "rotation grace period (default 1h)")
	from := fs.String("from", "", "start (RFC 3339 or YYYY-MM-DD)")
	to := fs.String("to", "", "end (RFC 3339 or YYYY-MM-DD)")
	groupBy := fs.String("group-by", "", "key,team,model,day,status")
	csv := fs.Bool("csv", false, "CSV instead of JSON")
	key := fs.String("key", "", "filter: key")
	limit := fs.Int("limit", 0, "page size")
	cursor := fs.String("cursor", "", "next_cursor of the previous page")
	// The name may come before the flags (teams update NAME --rpm 5) or after them.
	rest, pos := args[1:], []string(nil)
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		pos, rest = rest[:1], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return "", "", nil, err
	}
	pos = append(pos, fs.Args()...)
	arg := func() (string, error) {
		what, coll := "key", "/admin/v1/keys/"
		if strings.HasPrefix(cmd, "teams ") {
			what, coll = "team", "/admin/v1/teams/"
		}
		if len(pos) != 1 {
			return "", fmt.Errorf("admin %s: name the %s", cmd, what)
		}
		return coll + url.PathEscape(pos[0]), nil
	}
	switch cmd {
	case "teams list":
		return "GET", "/admin/v1/teams", nil, nil
	case "teams get", "teams delete":
		p, err := arg()
		if err != nil {
			return "", "", nil, err
		}
		if cmd == "teams get" {
			return "GET", p, nil, nil
		}
		return "DELETE", p, nil, nil
	case "teams create":
		if *name == "" {
			return "", "", nil, errors.New("admin teams create: --name is required")
		}
		b := appendList(jsonx.AppendString([]byte(`{"name":`), *name), "models", *models)
		return "POST", "/admin/v1/teams", append(appendLimits(b, fs, nil), '}'), nil
	case "teams update":
		p, err := arg()
		if err != nil {
			return "", "", nil, err
		}
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		if given["name"] {
			return "", "", nil, errors.New("admin teams update: a team cannot be renamed (--name)")
		}
		b := []byte{'{'}
		if given["models"] {
			b = appendList(b, "models", *models)
			if *models == "" {
				b = append(b, `,"models":[]`...) // --models "": any model
			}
		}
		b = appendLimits(b, fs, given)
		if len(b) == 1 {
			return "", "", nil, errors.New("admin teams update: nothing to change (give --models, --rpm, --tpm, --concurrent or --budget-*)")
		}
		b[1] = ' ' // the first member's comma
		return "PATCH", p, append(b, '}'), nil
	case "keys list":
		return "GET", "/admin/v1/keys", nil, nil
	case "keys get", "keys delete", "keys disable", "keys rotate":
		p, err := arg()
		if err != nil {
			return "", "", nil, err
		}
		switch cmd {
		case "keys get":
			return "GET", p, nil, nil
		case "keys delete":
			return "DELETE", p, nil, nil
		case "keys disable":
			return "POST", p + "/disable", nil, nil
		}
		b := []byte("{}")
		if *grace != "" {
			b = append(jsonx.AppendString([]byte(`{"grace":`), *grace), '}')
		}
		return "POST", p + "/rotate", b, nil
	case "keys create":
		if *name == "" {
			return "", "", nil, errors.New("admin keys create: --name is required")
		}
		b := jsonx.AppendString([]byte(`{"name":`), *name)
		b = appendList(appendList(b, "models", *models), "tools", *tools)
		if *team != "" {
			b = jsonx.AppendString(append(b, `,"team":`...), *team)
		}
		b = appendLimits(b, fs, nil)
		if *expires != "" {
			b = jsonx.AppendString(append(b, `,"expires_at":`...), *expires)
		}
		return "POST", "/admin/v1/keys", append(b, '}'), nil
	case "usage", "requests":
		q := url.Values{}
		for k, v := range map[string]string{"from": *from, "to": *to, "group_by": *groupBy, "key": *key, "cursor": *cursor} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if *csv {
			q.Set("format", "csv")
		}
		if *limit > 0 {
			q.Set("limit", strconv.Itoa(*limit))
		}
		p := "/admin/v1/" + cmd
		if len(q) > 0 {
			p += "?" + q.Encode()
		}
		return "GET", p, nil, nil
	}
	return "", "", nil, fmt.Errorf("admin: unknown command %q\n%s", cmd, adminUsage)
}

// appendList appends `,"member":[...]`, the comma-separated csv's items, unless csv is
// empty.
func appendList(b []byte, member, csv string) []byte {
	if csv == "" {
		return b
	}
	b = append(append(append(b, `,"`...), member...), `":[`...)
	for i, v := range strings.Split(csv, ",") {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonx.AppendString(b, strings.TrimSpace(v))
	}
	return append(b, ']')
}

// limitFlags are the members of "limits" and "budget" and the flags that set them.
var limitFlags = [...]struct{ object, member, flag string }{
	{"limits", "requests_per_minute", "rpm"}, {"limits", "tokens_per_minute", "tpm"}, {"limits", "concurrent", "concurrent"},
	{"budget", "tokens", "budget-tokens"}, {"budget", "usd", "budget-usd"}, {"budget", "period", "budget-period"},
}

// appendLimits appends the "limits" and "budget" members from fs's flags: those given
// (nil: every one, zero meaning none, and the period when set), each object only when
// one of its members is.
func appendLimits(b []byte, fs *flag.FlagSet, given map[string]bool) []byte {
	open := ""
	for _, l := range limitFlags {
		v := fs.Lookup(l.flag).Value.String()
		if given != nil && !given[l.flag] || given == nil && l.flag == "budget-period" && v == "" {
			continue
		}
		if open != l.object {
			if open != "" {
				b = append(b, '}')
			}
			b, open = append(append(append(b, `,"`...), l.object...), `":{`...), l.object
		} else {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), l.member...), `":`...)
		if l.flag == "budget-period" {
			b = jsonx.AppendString(b, v)
		} else {
			b = append(b, v...)
		}
	}
	if open != "" {
		b = append(b, '}')
	}
	return b
}
