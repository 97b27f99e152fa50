/* Built by make-wordpiece-tables.py: cc -I. scripts/reference/wordpiece-probe.c build/release/libwick.a ... */
#define WK_WPM_NO_TABLES /* utf8proc alone: what the tables correct */
#include "../../src/tokenizer/wordpiece.c"
#include <stdio.h>
static void pr(struct cps *c){ if(!c->n){printf("-");return;} for(size_t i=0;i<c->n;i++) printf(i?".%x":"%x",c->p[i]); }
int main(void){
 struct wk__wpm ws={.strip_accents=true}, wl={.lowercase=true};
 for (int32_t cp=0x80; cp<0x110000; cp++){ if(cp>=0xD800&&cp<=0xDFFF) continue;
  int other = (cp==0xFFFD|| is_other(cp)); int w = is_white_space(cp) && !other; int p = is_punct(cp); int sw = is_white_space(cp);
  struct cps a={0}, b={0}; push_folded(&ws,&a,cp); push_folded(&wl,&b,cp);
  printf("%x %d %d %d %d ",cp,other,w,p,sw); pr(&a); printf(" "); pr(&b); printf("\n"); wk_free(a.p); wk_free(b.p);}
}
