// Package realtime serves the Firebase Realtime Database's WebSocket
// protocol (version 5, at /.ws) that the official client SDKs speak, on
// the same replicated state, credentials and security rules as the REST
// API.
package realtime
