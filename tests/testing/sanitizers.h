// SLUICE_TEST_ASAN is defined in a build with AddressSanitizer (gcc's -fsanitize=address defines
// __SANITIZE_ADDRESS__, clang answers __has_feature), for cases that only that build can check
// or that it cannot run.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define SLUICE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLUICE_TEST_ASAN 1
#endif
#endif
