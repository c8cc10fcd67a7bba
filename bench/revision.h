#pragma once
// Filled at build time by cmake/Revision.cmake.
namespace condbench {
extern const char* const kVersion;
extern const char* const kGitRevision;
extern const char* const kBuildType;
}  // namespace condbench
