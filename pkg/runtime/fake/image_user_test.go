package fake

import "testing"

// TestImageUser: ImageStatus reports an image's user as containerd's getUserFromImage.
func TestImageUser(t *testing.T) {
	tests := []struct {
		user     string
		uid      int64 // -1: nil
		username string
	}{
		{"", -1, ""},
		{"1234", 1234, ""},
		{"1234:5678", 1234, ""},
		{"0", 0, ""},
		{"nginx", -1, "nginx"},
		{"nginx:nginx", -1, "nginx"},
	}
	for _, tt := range tests {
		uid, name := imageUser(tt.user)
		if (uid == nil) != (tt.uid == -1) || uid != nil && *uid != tt.uid || name != tt.username {
			t.Errorf("imageUser(%q) = %v %q, want %d %q", tt.user, uid, name, tt.uid, tt.username)
		}
	}
}
