package guardbin

// LoadProgram is load, for the external tests.
var LoadProgram = load
