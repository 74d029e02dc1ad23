"""What front ends drive: the live session, the replay session, and their control protocols."""
