// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_proc.h"

#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace dt::launch {

long open_descriptors()
{
    DIR *dir = opendir("/proc/self/fd");
    if (!dir)
        return 0;
    long n = 0;
    while (readdir(dir) != nullptr)
        ++n;
    closedir(dir);
    return std::max(0L, n - 3); // ".", ".." and the directory's own descriptor
}

std::set<pid_t> groups_with_members(const std::vector<pid_t> &pgids)
{
    std::set<pid_t> found;
    std::set<pid_t> candidates;
    for (pid_t g : pgids)
        if (kill(-g, 0) == 0 || errno == EPERM)
            candidates.insert(g);
    if (candidates.empty())
        return found;
    DIR *proc = opendir("/proc");
    if (!proc)
        return candidates;
    while (dirent *e = readdir(proc)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        std::string path = std::string("/proc/") + e->d_name + "/stat";
        FILE *f = std::fopen(path.c_str(), "r");
        if (!f)
            continue;
        char buf[512];
        size_t n = std::fread(buf, 1, sizeof buf - 1, f);
        std::fclose(f);
        buf[n] = '\0';
        // "pid (comm) state ppid pgrp ...": comm may hold anything, so from the last ')'.
        const char *close = std::strrchr(buf, ')');
        char state = 0;
        int ppid = 0, pgrp = 0;
        if (!close || std::sscanf(close + 1, " %c %d %d", &state, &ppid, &pgrp) != 3)
            continue;
        if (state != 'Z' && candidates.count(pgrp))
            found.insert(pgrp);
    }
    closedir(proc);
    return found;
}

} // namespace dt::launch
