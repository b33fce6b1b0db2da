package npy
import ("testing";"math")
func TestQuick(t *testing.T){
 for _,c:=range []struct{x float64; h uint16}{{1,0x3c00},{65504,0x7bff},{65519,0x7bff},{65520,0x7c00},{0x1p-24,1},{0x1p-25,0},{0x1.8p-25,1},{-2,0xc000},{0x1p-14,0x0400},{1+0x1p-11,0x3c00},{1+0x1.8p-11,0x3c02}}{ if g:=F16FromF64(c.x); g!=c.h {t.Errorf("%v: %x want %x",c.x,g,c.h)}}
 for h:=0;h<65536;h++{ v:=F16ToF64(uint16(h)); if math.IsNaN(v){continue}; if g:=F16FromF64(v); g!=uint16(h){t.Errorf("rt %x -> %x",h,g)} ; b:=BF16ToF32(uint16(h)); if math.IsNaN(float64(b)){continue}; if g:=BF16FromF64(float64(b)); g!=uint16(h){t.Errorf("bf rt %x -> %x",h,g)}; if g:=BF16FromF32(b); g!=uint16(h){t.Errorf("bf32 rt %x",h)}}
}
