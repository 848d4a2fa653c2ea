/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rule for a directory redirect's value (trusted.unionfs.redirect,
 * docs/concepts.md "Directory rename"), shared by the module (lookup.c) and
 * unionctl --fsck, which must reject exactly the values the module rejects:
 * a path relative to each branch's root ("a/b"), shorter than PATH_MAX, no
 * NUL inside, no leading or trailing '/', no empty, "." or ".." component,
 * no component longer than NAME_MAX, no ".wh." name (UNIONFS_WHPFX). The
 * includer provides strlen, strncmp, strchrnul, NAME_MAX and PATH_MAX.
 */
#ifndef _UNIONFS_REDIRECT_H
#define _UNIONFS_REDIRECT_H

/* Is @p, @n bytes, a valid redirect (1) or not (0)? */
static inline int unionfs_redirect_valid(const char *p, size_t n)
{
	const char *s;

	if (!n || n >= PATH_MAX || strlen(p) != n || p[0] == '/' ||
	    p[n - 1] == '/')
		return 0;
	for (; *p; p = *s ? s + 1 : s) {
		size_t len;

		s = strchrnul(p, '/');
		len = s - p;
		if (!len || len > NAME_MAX || (len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.') ||
		    (len >= 4 && !strncmp(p, ".wh.", 4)))
			return 0;
	}
	return 1;
}

#endif /* _UNIONFS_REDIRECT_H */
