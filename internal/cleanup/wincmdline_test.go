package cleanup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWindowsCommandLines: how the cleanup reads a Pulumi command line on
// Windows (Win32_Process's CommandLine), split as CommandLineToArgvW
// splits it (Microsoft's "Parsing C++ command-line arguments" table), and
// PowerShell's JSON of the process read.
func TestWindowsCommandLines(t *testing.T) {
	for line, want := range map[string][]string{
		`"C:\Program Files\Pulumi\pulumi.exe" destroy --yes`:   {`C:\Program Files\Pulumi\pulumi.exe`, "destroy", "--yes"},
		`pulumi.exe destroy --target "urn:pulumi:dev::p::a b"`: {"pulumi.exe", "destroy", "--target", "urn:pulumi:dev::p::a b"},
		`C:\bin\pulumi.exe  up	-s dev`:                         {`C:\bin\pulumi.exe`, "up", "-s", "dev"},
		`pulumi "a\"b" c\\d "e\\" f`:                           {"pulumi", `a"b`, `c\\d`, `e\`, "f"},
		`pulumi a\\\"b "" x`:                                   {"pulumi", `a\"b`, "", "x"},
		`"C:\Program Files\Pulumi\pulumi.exe"`:                 {`C:\Program Files\Pulumi\pulumi.exe`},
		`pulumi a"b"" c d`:                                     {"pulumi", `ab"`, "c", "d"},
		`pulumi "a""b" c`:                                      {"pulumi", `a"b c`}, // "" ends the quoting, and the next quote reopens it
	} {
		assert.Equal(t, want, windowsArgs(line), "%s", line)
	}
	ppid, args, err := parseWin32Process([]byte(`{"ParentProcessId":4312,"CommandLine":"\"C:\\Program Files\\Pulumi\\pulumi.exe\" destroy --yes"}` + "\r\n"))
	require.NoError(t, err)
	assert.Equal(t, 4312, ppid)
	assert.True(t, isPulumi([]string{"pulumi.exe"}))
	assert.True(t, isPulumi([]string{"Pulumi.EXE"}), "any case")
	assert.Equal(t, "destroy", parseInvocation(args).Command)
	_, _, err = parseWin32Process([]byte(`{"ParentProcessId":4,"CommandLine":null}`))
	require.ErrorContains(t, err, "no command line")
	_, _, err = parseWin32Process(nil)
	require.Error(t, err, "no such process: nothing answered")
}
