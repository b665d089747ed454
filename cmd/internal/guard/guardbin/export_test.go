package guardbin

import (
	"bytes"
	"os"
)

// LoadProgram is load of prog, for the external tests.
func LoadProgram(prog []byte) (*os.File, error) { return load(bytes.NewReader(prog)) }
