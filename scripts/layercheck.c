/* scripts/layercheck.c: the whole of one layer's library is linked into this
 * empty program with only the layers below it (CMakeLists.txt,
 * layercheck_<lib>): a call to a function of a higher layer fails the link. */
int
main(void)
{
    return 0;
}
