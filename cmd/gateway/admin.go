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
	if cmd == "keys" && len(args) > 1 {
		cmd, args = "keys "+args[1], args[1:]
	}
	fs := flag.NewFlagSet("gateway admin "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "key name")
	models := fs.String("models", "", "comma-separated model globs")
	tools := fs.String("tools", "", "comma-separated tool names")
	team := fs.String("team", "", "team")
	usd := fs.Float64("budget-usd", 0, "USD budget per period")
	tokens := fs.Int("budget-tokens", 0, "token budget per period")
	period := fs.String("budget-period", "", "budget period (default 720h)")
	rpm := fs.Int("rpm", 0, "requests per minute")
	tpm := fs.Int("tpm", 0, "tokens per minute")
	conc := fs.Int("concurrent", 0, "concurrent requests")
	expires := fs.String("expires", "", "expiry, RFC 3339")
	grace := fs.String("grace", "", "rotation grace period (default 1h)")
	from := fs.String("from", "", "start (RFC 3339 or YYYY-MM-DD)")
	to := fs.String("to", "", "end (RFC 3339 or YYYY-MM-DD)")
	groupBy := fs.String("group-by", "", "key,team,model,day,status")
	csv := fs.Bool("csv", false, "CSV instead of JSON")
	key := fs.String("key", "", "filter: key")
	limit := fs.Int("limit", 0, "page size")
	cursor := fs.String("cursor", "", "next_cursor of the previous page")
	if err := fs.Parse(args[1:]); err != nil {
		return "", "", nil, err
	}
	arg := func() (string, error) {
		if fs.NArg() != 1 {
			return "", fmt.Errorf("admin %s: name the key", cmd)
		}
		return "/admin/v1/keys/" + url.PathEscape(fs.Arg(0)), nil
	}
	switch cmd {
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
		for _, l := range []struct{ member, csv string }{{"models", *models}, {"tools", *tools}} {
			if l.csv == "" {
				continue
			}
			b = append(append(append(b, `,"`...), l.member...), `":[`...)
			for i, v := range strings.Split(l.csv, ",") {
				if i > 0 {
					b = append(b, ',')
				}
				b = jsonx.AppendString(b, strings.TrimSpace(v))
			}
			b = append(b, ']')
		}
		if *team != "" {
			b = jsonx.AppendString(append(b, `,"team":`...), *team)
		}
		b = strconv.AppendInt(append(b, `,"limits":{"requests_per_minute":`...), int64(*rpm), 10)
		b = strconv.AppendInt(append(b, `,"tokens_per_minute":`...), int64(*tpm), 10)
		b = strconv.AppendInt(append(b, `,"concurrent":`...), int64(*conc), 10)
		b = strconv.AppendInt(append(b, `},"budget":{"tokens":`...), int64(*tokens), 10)
		b = strconv.AppendFloat(append(b, `,"usd":`...), *usd, 'f', -1, 64)
		if *period != "" {
			b = jsonx.AppendString(append(b, `,"period":`...), *period)
		}
		b = append(b, '}')
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
