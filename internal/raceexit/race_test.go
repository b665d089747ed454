//go:build race

package raceexit

const raceBuilt = true
