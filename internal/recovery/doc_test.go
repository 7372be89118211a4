package recovery

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the generated section of docs/recovery.md")

// TestRecoveryDocListsTheInventory holds docs/recovery.md's table to the
// inventory the code uses.
func TestRecoveryDocListsTheInventory(t *testing.T) {
	types := make([]string, 0, len(Inventory))
	for typ := range Inventory {
		types = append(types, typ)
	}
	sort.Strings(types)
	var b strings.Builder
	b.WriteString("| type | does a cut-off create leave an object? | who decides, and how | import ID | ID format from |\n|---|---|---|---|---|\n")
	cell := func(s string) string {
		if s == "" {
			return "—"
		}
		return strings.ReplaceAll(s, "|", `\|`)
	}
	for _, typ := range types {
		k := Inventory[typ]
		finds := "by itself: " + k.Finds
		if k.Find == nil {
			finds = "nothing to find: the create is cleared"
		}
		id := cell(k.ID)
		if strings.Contains(id, "<") {
			id = "`" + id + "`" // not HTML
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", typ, cell(k.Leaves), cell(finds), id, cell(k.Source))
	}
	const doc = "../../docs/recovery.md"
	raw, err := os.ReadFile(doc)
	require.NoError(t, err)
	begin, end := "<!-- inventory:begin -->\n", "<!-- inventory:end -->"
	i, j := strings.Index(string(raw), begin), strings.Index(string(raw), end)
	require.True(t, i >= 0 && j > i, "docs/recovery.md has the inventory markers")
	if *update {
		require.NoError(t, os.WriteFile(doc, []byte(string(raw)[:i+len(begin)]+b.String()+string(raw)[j:]), 0o644))
		return
	}
	assert.Equal(t, b.String(), string(raw)[i+len(begin):j], "docs/recovery.md's inventory is generated: go test ./internal/recovery -run TestRecoveryDoc -update")
}
