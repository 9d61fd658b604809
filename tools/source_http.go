package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/propagation"

	"github.com/agate-gateway/agate/telemetry"
)

// maxWebhookBody bounds how much of a webhook response is read; the Registry truncates
// further to the tool's MaxResultBytes.
const maxWebhookBody = 16 << 20

// maxErrorBody bounds the part of a failed webhook's body quoted to the model.
const maxErrorBody = 1024

// webhookSource is a type http source: one tool that POSTs its arguments to a URL.
type webhookSource struct {
	name    string
	url     string
	headers http.Header
	client  *http.Client
	spec    toolSpec
}

var _ source = (*webhookSource)(nil)

func newWebhookSource(name string, cfg SourceOptions) (*webhookSource, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q: want an absolute http or https URL", cfg.URL)
	}
	spec := toolSpec{Tool: name, NamedAfterSource: true, Description: cfg.Description, ReadOnly: cfg.ReadOnly}
	if cfg.Parameters != nil {
		if spec.Parameters, err = json.Marshal(cfg.Parameters); err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
	}
	h := make(http.Header, len(cfg.Headers)+1)
	for k, v := range cfg.Headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", "application/json")
	return &webhookSource{
		name:    name,
		url:     cfg.URL,
		headers: h,
		// No client timeout: each call's context carries the tool's timeout. Redirects are
		// not followed: the body and the secret headers go to the configured URL only.
		client: &http.Client{
			Transport:     http.DefaultTransport.(*http.Transport).Clone(),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		spec: spec,
	}, nil
}

func (s *webhookSource) start(context.Context) ([]toolSpec, error) {
	return []toolSpec{s.spec}, nil
}

func (s *webhookSource) call(ctx context.Context, _ string, args json.RawMessage) (Result, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(args))
	if err != nil {
		return Result{}, err
	}
	req.Header = s.headers.Clone()
	telemetry.Inject(ctx, propagation.HeaderCarrier(req.Header)) // traceparent of the tool's span, when tracing
	resp, err := s.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL may hold secrets; the model needs only the cause
		}
		return Result{}, fmt.Errorf("webhook request: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxWebhookBody))
	if err != nil {
		return Result{}, fmt.Errorf("reading webhook response: %w", err)
	}
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		// Neither the Location nor the body (which usually repeats it) is quoted: the
		// redirect target may carry secrets of its own.
		return Result{Content: fmt.Sprintf("webhook returned HTTP %s; redirects are not followed", resp.Status), IsError: true}, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("webhook returned HTTP %s", resp.Status)
		if b := strings.TrimSpace(string(body)); b != "" {
			msg += ": " + truncateString(b, maxErrorBody)
		}
		return Result{Content: msg, IsError: true}, nil
	}
	return Result{Content: string(body)}, nil
}

// ready is always nil: a webhook has no connection to lose; failures show per call.
func (s *webhookSource) ready() error { return nil }

func (s *webhookSource) close() error {
	s.client.CloseIdleConnections()
	return nil
}
