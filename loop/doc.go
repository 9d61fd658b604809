// Package loop runs server-side tool loops: it calls the model, executes the server tools
// the model asks for, feeds the results back, and repeats until the model answers, while
// the client sees one seamless response (DESIGN section 5).
package loop
