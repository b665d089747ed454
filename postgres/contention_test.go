package postgres_test

func runChild() int { return 2 }
