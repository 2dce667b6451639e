/* rt.h - common ground of the runtime pieces that einc pastes into every
 * generated program (see runtime/README.md).
 *
 * RT_API marks each runtime function.  Built as a library (the unit tests)
 * the functions are external.  A generated file defines EINC_RT_STATIC
 * before the pieces, which makes them static: two generated models can then
 * be linked into one program without clashing names, and pieces a program
 * does not call raise no warnings. */
#ifndef EINC_RT_H
#define EINC_RT_H

#ifndef RT_API
#  if defined(EINC_RT_STATIC) && defined(__GNUC__)
#    define RT_API static __attribute__((unused))
#  elif defined(EINC_RT_STATIC)
#    define RT_API static
#  else
#    define RT_API
#  endif
#endif

#endif
