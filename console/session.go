package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// session is one signed-in administrator.
type session struct {
	actor   string
	csrf    string
	expires time.Time
}

// sessionStore keeps the signed-in administrators: in this process (sessions) or in
// Redis, shared by the replicas (redisSessions). Both are bounded and expire sessions.
type sessionStore interface {
	// open signs actor in and returns the new session's cookie value and session.
	open(actor string) (id string, s session, err error)
	// get returns the live session of the cookie value id.
	get(id string) (session, bool)
	// end signs the session of id out.
	end(id string)
	// len is the number of sessions held (expired ones not yet dropped included).
	len() int
}

// sessions is the bounded store of the signed-in administrators, keyed by the SHA-256 of
// the cookie's value (the value itself is kept nowhere).
type sessions struct {
	mu  sync.Mutex
	m   map[[sha256.Size]byte]session
	max int
	ttl time.Duration
	now func() time.Time
}

func newSessions(max int, ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{m: make(map[[sha256.Size]byte]session), max: max, ttl: ttl, now: now}
}

// token returns 32 random bytes, base64url.
func token() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create signs actor in: the cookie value and the CSRF token of a new session. When the
// store is full, expired sessions go first, then the one closest to its end.
func (s *sessions) create(actor string) (id, csrf string, expires time.Time) {
	id, csrf = token(), token()
	now := s.now()
	expires = now.Add(s.ttl)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		var soonest [sha256.Size]byte
		var at time.Time
		for k, v := range s.m {
			if !v.expires.After(now) {
				delete(s.m, k)
				continue
			}
			if at.IsZero() || v.expires.Before(at) {
				soonest, at = k, v.expires
			}
		}
		if len(s.m) >= s.max {
			delete(s.m, soonest)
		}
	}
	s.m[sha256.Sum256([]byte(id))] = session{actor: actor, csrf: csrf, expires: expires}
	return id, csrf, expires
}

// open is create as the sessionStore's method.
func (s *sessions) open(actor string) (string, session, error) {
	id, csrf, expires := s.create(actor)
	return id, session{actor: actor, csrf: csrf, expires: expires}, nil
}

// get returns the live session of the cookie value id.
func (s *sessions) get(id string) (session, bool) {
	if id == "" || len(id) > 128 {
		return session{}, false
	}
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	if !ok {
		return session{}, false
	}
	if !v.expires.After(s.now()) {
		delete(s.m, k)
		return session{}, false
	}
	return v, true
}

// end signs the session of id out.
func (s *sessions) end(id string) {
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	delete(s.m, k)
	s.mu.Unlock()
}

// len is the number of sessions held (expired ones not yet dropped included).
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// csrfOK reports whether got is the session's CSRF token, compared in constant time.
func (v session) csrfOK(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(v.csrf)) == 1
}
