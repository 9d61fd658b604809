// Package respcache is the response cache's machinery, apart from the request path that
// uses it (proxy/responsecache.go): an answer's events recorded into one compact entry
// and replayed from it (Recorder, Replay), the stores that keep entries for a TTL
// (Memory: an LRU bounded by bytes; Redis: shared by replicas, compressed), the key of a
// request (Key) and the single flight of identical concurrent requests (Flights).
//
// An entry holds translate events, not any client API's bytes: the one entry answers a
// chat completion, a Responses or a Messages request, streamed or not, each in its own
// shape, with the ids and times of the new answer.
package respcache
