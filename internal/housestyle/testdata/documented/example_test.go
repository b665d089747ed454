package documented_test

import (
	"fmt"

	"example.com/documented"
)

func ExampleNew() {
	fmt.Println(documented.New(documented.Small).Size())
	// Output: 0
}

func ExampleWidget_Size() {
	w := documented.New(documented.Large)
	w.Grow()
	fmt.Println(w.Size())
	// Output: 2
}
