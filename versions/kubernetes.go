package versions

import "time"

// KubernetesRelease is one Kubernetes minor on Amazon EKS: when EKS
// released it and when its standard and extended support end. EKS bills a
// cluster $0.10 an hour in standard support and $0.60 in extended support;
// at the end of extended support EKS upgrades the control plane itself and
// creates no new cluster of that minor.
type KubernetesRelease struct {
	// Minor is NN of "1.NN".
	Minor int
	// Released, EndOfStandardSupport and EndOfExtendedSupport are days
	// (UTC) of the EKS calendar.
	Released, EndOfStandardSupport, EndOfExtendedSupport time.Time
	// Source says where the dates come from.
	Source string
}

// Hourly control-plane prices (us-east-1 and most regions), from
// https://aws.amazon.com/eks/pricing/ and the EKS extended support pricing
// announcement (April 2024).
const (
	StandardSupportUSDPerHour = 0.10
	ExtendedSupportUSDPerHour = 0.60
)

const (
	// eksCalendar is the official calendar; the copy read for 1.29-1.34
	// is awsdocs/amazon-eks-user-guide
	// latest/ug/versioning/kubernetes-versions.adoc (commit 013856044148).
	eksCalendar = "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html"
	// The 1.35 and 1.36 rows were read from copies of the same page
	// quoted elsewhere (endoflife.date/amazon-eks, aws-samples
	// eks-upgrade-check references verified 2026-08-06); check them
	// against eksCalendar when this table next changes.
	eksCalendarQuoted = eksCalendar + " (as quoted by endoflife.date/amazon-eks and aws-samples, Aug 2026)"
)

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// EKSCalendar lists the minors that the pinned Karpenter supports
// (MinKubernetesMinor-MaxKubernetesMinor) and EKS has released, oldest
// first. A test keeps it contiguous and within Karpenter's range.
var EKSCalendar = []KubernetesRelease{
	{Minor: 29, Released: day("2024-01-23"), EndOfStandardSupport: day("2025-03-23"), EndOfExtendedSupport: day("2026-03-23"), Source: eksCalendar},
	{Minor: 30, Released: day("2024-05-23"), EndOfStandardSupport: day("2025-07-23"), EndOfExtendedSupport: day("2026-07-23"), Source: eksCalendar},
	{Minor: 31, Released: day("2024-09-26"), EndOfStandardSupport: day("2025-11-26"), EndOfExtendedSupport: day("2026-11-26"), Source: eksCalendar},
	{Minor: 32, Released: day("2025-01-23"), EndOfStandardSupport: day("2026-03-23"), EndOfExtendedSupport: day("2027-03-23"), Source: eksCalendar},
	{Minor: 33, Released: day("2025-05-29"), EndOfStandardSupport: day("2026-07-29"), EndOfExtendedSupport: day("2027-07-29"), Source: eksCalendar},
	{Minor: 34, Released: day("2025-10-02"), EndOfStandardSupport: day("2026-12-02"), EndOfExtendedSupport: day("2027-12-02"), Source: eksCalendar},
	{Minor: 35, Released: day("2026-01-27"), EndOfStandardSupport: day("2027-03-27"), EndOfExtendedSupport: day("2028-03-27"), Source: eksCalendarQuoted},
	{Minor: 36, Released: day("2026-06-02"), EndOfStandardSupport: day("2027-08-02"), EndOfExtendedSupport: day("2028-08-02"), Source: eksCalendarQuoted},
}

// DefaultKubernetesMinor is the newest minor that both EKS and the pinned
// Karpenter support; a test holds it to EKSCalendar and the Karpenter range.
const DefaultKubernetesMinor = 36

// Kubernetes returns the calendar entry of 1.minor.
func Kubernetes(minor int) (KubernetesRelease, bool) {
	for _, r := range EKSCalendar {
		if r.Minor == minor {
			return r, true
		}
	}
	return KubernetesRelease{}, false
}

// InStandardSupport reports whether the minor is in standard support on day.
func (r KubernetesRelease) InStandardSupport(day time.Time) bool {
	return day.Before(r.EndOfStandardSupport)
}

// Supported reports whether EKS still runs and creates the minor on day
// (standard or extended support).
func (r KubernetesRelease) Supported(day time.Time) bool {
	return day.Before(r.EndOfExtendedSupport)
}
