// Package httpapi serves Arbor's Firebase-compatible REST surface on Gin:
// it turns requests into fsm reads and commands, checks credentials, and
// maps every error to one status and body.
package httpapi
