// Package quantity parses resource quantities from untrusted text without the cost of a huge exponent, and compares resource lists.
package quantity
