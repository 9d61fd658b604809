// Package responsesin is the OpenAI Responses API as a client dialect: what Agate serves on
// POST /v1/responses. Parse reads a Responses request into the gateway's core
// translate.Request (plus the few things only this dialect has: store,
// previous_response_id, include, instructions, the settings echoed back); Encoder turns the
// core translate.Events of any upstream back into a Response object and the Responses
// server-sent event sequence; Answer is its side of the client contract
// (translate.ClientStream, translate.ClientAssembler; client.go). passthrough.go reads what
// the proxy needs of the bodies it forwards to a responses backend and of that backend's
// answers, and Forward rewrites that backend's stream for the client.
//
// It imports only the core translate package, internal/jsonx, translate/internal/members and translate/internal/slab; it must not import a
// provider dialect, the proxy or anything that does I/O. It is pure: ids and clocks come
// from the caller.
package responsesin
