package proxy

import (
	"testing"
	"time"
)

func TestAppendReset(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{name: "zero", d: 0, want: "0s"},
		{name: "negative", d: -time.Second, want: "0s"},
		{name: "below a millisecond", d: 400 * time.Microsecond, want: "0s"},
		{name: "milliseconds", d: 12 * time.Millisecond, want: "0.012s"},
		{name: "trailing zeros cut", d: 59500 * time.Millisecond, want: "59.5s"},
		{name: "whole seconds", d: time.Minute, want: "60s"},
		{name: "long", d: 720 * time.Hour, want: "2592000s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(appendReset(nil, tt.d))
			if got != tt.want {
				t.Errorf("appendReset(%v) = %q, want %q", tt.d, got, tt.want)
			}
			if d, err := time.ParseDuration(got); err != nil || d > tt.d && tt.d >= 0 {
				t.Errorf("time.ParseDuration(%q) = %v, %v", got, d, err)
			}
		})
	}
}
