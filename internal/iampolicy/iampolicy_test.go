package iampolicy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplit(t *testing.T) {
	var statements []Statement
	for i := range 40 {
		statements = append(statements, Statement{Sid: fmt.Sprintf("S%d", i), Effect: "Allow", Action: "ec2:DescribeInstances",
			Resource: strings.Repeat("x", 200)})
	}
	doc := New(statements...)
	parts, err := Split(doc, 1000)
	require.NoError(t, err)
	require.Greater(t, len(parts), 1)
	var back []Statement
	for _, p := range parts {
		assert.LessOrEqual(t, p.Size(), 1000)
		back = append(back, p.Statement...)
	}
	assert.Equal(t, doc.Statement, back, "every statement, once, in order")

	_, err = Split(New(Statement{Sid: "Huge", Effect: "Allow", Action: "*", Resource: strings.Repeat("x", 2000)}), 1000)
	assert.ErrorContains(t, err, `statement "Huge" alone is`)
}
