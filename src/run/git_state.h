// The git state of the folder a run starts in, read from `.git` itself: starting git costs
// 5 to 10 ms of wall time and CPU each time, more than the rest of a `footprint run`'s
// start-up (issue 43). What the files alone cannot settle is left to the caller, which asks
// git then. The files of `.git`, and HOME and XDG_CONFIG_HOME (where git's own configuration
// is), are read through the Env; the stat data of the work tree and of the index, whether
// `.git` is a folder, and the packs (read in place) come from the file system.
#ifndef FOOTPRINT_RUN_GIT_STATE_H_
#define FOOTPRINT_RUN_GIT_STATE_H_

#include <optional>
#include <string>

#include "footprint/env.h"

namespace footprint {

// Where a repository's files are. `git_dir` holds HEAD and the index; `common_dir` the refs,
// packed-refs and objects. They differ for a linked worktree (`.git` is a "gitdir: PATH" file
// and the git dir has a `commondir` file); a submodule's `.git` file names its git dir too.
struct GitLayout {
  std::string work_tree, git_dir, common_dir;
};

// The repository `dir` is inside: the nearest `.git` folder or `gitdir:` file at or above it.
std::optional<GitLayout> FindGitRepository(const std::string& dir, Env& env);

// What HEAD resolves to: the commit, and the branch as `git rev-parse --abbrev-ref HEAD`
// prints it ("HEAD" when detached).
struct GitHead {
  std::string commit, branch;
};

// HEAD through symbolic refs, loose refs and packed-refs. nullopt when the files do not
// settle it (an unborn branch, a reftable repository, a ref missing from both places).
std::optional<GitHead> ReadGitHead(const GitLayout& repo, Env& env);

// `git status --porcelain --untracked-files=no`'s verdict: dirty when the index differs from
// HEAD's tree or a tracked file from the index.
enum class GitDirty { kClean, kDirty, kUnsure };

// The verdict from the index alone, without reading any tracked file's content: the index's
// cached root tree against HEAD's commit, and each tracked file's stat data against the
// index's (a size that differs is a change unless content may be converted: attributes,
// autocrlf). kUnsure where only content could tell (a touched file, an entry as new as the
// index, a submodule, an invalidated cached tree, a packed delta, more than 100,000 files).
GitDirty GitDirtyFromIndex(const GitLayout& repo, const std::string& head_commit, Env& env);

}  // namespace footprint

#endif  // FOOTPRINT_RUN_GIT_STATE_H_
