/* fs.c - file-system helpers the layers above share. */
#include "core/core.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

rill_code rill__errno_code(int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR:
        return RILL_NOT_FOUND;
    case EEXIST:
        return RILL_ALREADY_EXISTS;
    case EACCES:
    case EPERM:
    case EROFS:
        return RILL_PERMISSION_DENIED;
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case EFBIG:
        return RILL_RESOURCE_EXHAUSTED;
    case EISDIR:
    case ENOTEMPTY:
    case EBUSY:
    case ELOOP:
        return RILL_FAILED_PRECONDITION;
    case EINVAL:
    case ENAMETOOLONG:
        return RILL_INVALID_ARGUMENT;
    default:
        return RILL_UNAVAILABLE;
    }
}

bool rill__make_dirs(const char *dir, rill_status *s)
{
    char *p = rill__strdup(dir);
    bool ok = true;
    for (char *c = p + 1; ok; c++) {
        bool end = *c == 0;
        if (*c != '/' && !end) continue;
        *c = 0;
        struct stat st;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            int err = errno;
            rill_status_set(s, rill__errno_code(err), "Could not create the log directory '%s': %s", p,
                            strerror(err));
            ok = false;
        } else if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
            rill_status_set(s, RILL_FAILED_PRECONDITION,
                            "Could not create the log directory '%s': '%s' is not a directory", dir,
                            p);
            ok = false;
        }
        if (end) break;
        *c = '/';
    }
    rill__free(p);
    return ok;
}
