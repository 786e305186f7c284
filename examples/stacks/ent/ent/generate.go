// Package ent is the ent client of the ent example, generated from
// ./schema by ent v0.14.5 (go generate ./ent/ent, from examples/stacks).
package ent

//go:generate go run entgo.io/ent/cmd/ent@v0.14.5 generate ./schema
