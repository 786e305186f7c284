package pgsql

import (
	"reflect"
	"strings"
	"testing"

	"github.com/txinbox/txinbox/store/schema"
)

// Every statement is expanded for the store's tables: none keeps a
// {table} placeholder, and each names the schema's tables.
func TestStatementsExpanded(t *testing.T) {
	s := NewStatements(schema.NewTables("s1", "p_"), Qualify("s1", "p_inbox_periods"))
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		name, sql := v.Type().Field(i).Name, v.Field(i).String()
		if sql == "" {
			t.Errorf("%s is empty", name)
		}
		if strings.ContainsAny(sql, "{}") {
			t.Errorf("%s keeps a placeholder:\n%s", name, sql)
		}
		if !strings.Contains(sql, `"s1"."p_`) {
			t.Errorf("%s names no table of schema s1 with prefix p_:\n%s", name, sql)
		}
	}
}
