/* version.c - the library's version, from project(rill VERSION ...) in CMakeLists.txt. */
#include <rill/version.h>

#ifndef RILL_VERSION_STRING
#error "RILL_VERSION_STRING comes from the build (CMakeLists.txt)"
#endif

const char *rill_version(void)
{
    return RILL_VERSION_STRING;
}
