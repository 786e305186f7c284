// Package schema is the ent schema of the ent example: one entity, the
// invoice its handler writes.
package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
)

// Invoice holds the schema definition for the Invoice entity.
type Invoice struct {
	ent.Schema
}

// Annotations names the entity's table.
func (Invoice) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "invoices"}}
}

// Fields of the Invoice.
func (Invoice) Fields() []ent.Field {
	return []ent.Field{
		field.String("message_id"),
		field.String("body"),
	}
}
