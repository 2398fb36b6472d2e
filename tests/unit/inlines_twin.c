/*
 * inlines_twin.c - a static function with the same name as one in test_inlines.c: two functions
 * of one name in one load object, which the function list must tell apart.
 */
__attribute__((noinline, used)) static int twin(int x) { return x * 5 + 1; }
void *inlines_twin_addr(void) { return (void *)twin; }
