// Package idtoken verifies ID tokens (JWTs) offline and turns them into the
// `auth` variable of Firebase security rules.
//
// It accepts HS256 tokens signed with configured shared secrets (including
// legacy firebase-token-generator tokens), and RS256 and ES256 tokens signed
// by keys the operator supplies as files: PEM, JWKS, or the x509 JSON that
// Google publishes for Firebase Authentication, so real Firebase ID tokens
// verify without the server ever reaching the network. Key files are
// re-read when they change, which lets an operator rotate keys with a cron
// job that downloads Google's certificates; a key removed from them stops
// verifying, and Trusts tells the holder of an identity verified earlier
// (an open stream) that its key is gone. Every token must carry exp and
// iat, and live at most Config.MaxLifetime.
//
// Verification is cached per token, so the cost of RSA or ECDSA is paid once
// per token rather than once per request.
package idtoken
