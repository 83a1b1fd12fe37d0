package tree

// The types parsing and rendering share (parse*.go, render.go).

// Field is one location of a PATCH body: a path relative to the request
// path and the value to put there (nil deletes).
type Field struct {
	Path  Path
	Value *Node
}

// RenderOptions control how a node is written as JSON.
type RenderOptions struct {
	// Pretty indents with two spaces.
	Pretty bool
	// Export shows priorities as ".priority"/".value" and never renders arrays.
	Export bool

	spill *spiller // set by the Spilling renderers (render_spill.go)
}
